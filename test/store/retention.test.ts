import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunState } from '../../src/loop/run-state.js';
import { approvalIdFor } from '../../src/store/index.js';
import { keysOf, type StoreFixture, storeFixture } from './redis-fixture.js';
import { advance, newState, realisticState, slack, T0 } from './run-state-fixture.js';

const DAY = 86_400_000;
const RUN = 'run-ret';
let fx: StoreFixture;
beforeEach(() => {
  fx = storeFixture({ retentionMs: 2 * DAY, maxRunLifetimeMs: 10 * DAY });
});
afterEach(async () => {
  await fx.cleanup();
});

/** PTTL of every key of the run, by key suffix. */
async function ttls(): Promise<Record<string, number>> {
  const base = fx.store.context.keys.run(RUN).base;
  const keys = (await keysOf(fx.redis, fx.prefix)).filter((k) => k.startsWith(base));
  const out: Record<string, number> = {};
  for (const key of keys) out[key.slice(base.length)] = await fx.redis.pttl(key);
  return out;
}

describe('retention', () => {
  it('gives a new run the lifetime TTL, and keys created later follow the header', async () => {
    const state = newState(RUN);
    await fx.store.runs.createRun(state, slack);
    const lease = await fx.store.leases.acquire(RUN, 'w', 30_000);
    if (!lease.acquired) throw new Error('not acquired');
    const withEvidence: RunState = {
      ...advance(state, 1),
      evidence: [
        { toolCallId: 'call_s1', tool: 'prometheus_query', kind: 'result', ok: true, summary: 'up', at: T0 },
      ],
    };
    await fx.store.runs.saveStep({
      runId: RUN,
      fence: lease.fence,
      state: withEvidence,
      persisted: { messages: 2, evidence: 0 },
    });
    await fx.store.runs.appendTrace(RUN, [{ type: 'step_started', at: T0 }]);
    for (const [suffix, ttl] of Object.entries(await ttls())) {
      if (suffix === 'lease') continue;
      expect(ttl, suffix).toBeGreaterThan(9 * DAY);
      expect(ttl, suffix).toBeLessThanOrEqual(10 * DAY);
    }
  });

  it('sets the retention TTL on every key of a run when it finishes: state, trace, approvals, ledger', async () => {
    const state = realisticState(RUN);
    await fx.store.runs.createRun(state, slack);
    const lease = await fx.store.leases.acquire(RUN, 'w', 30_000);
    if (!lease.acquired) throw new Error('not acquired');
    const call = state.turn!.pending[0]!;
    await fx.store.approvals.createApprovals({
      runId: RUN,
      fence: lease.fence,
      requester: 'U0ALICE',
      now: T0,
      approvals: [{ call, approvers: { users: [], groups: [] }, expiresAt: T0 + DAY }],
    });
    const approvalId = approvalIdFor(RUN, call.toolCallId);
    await fx.store.approvals.decide({ approvalId, decision: 'approved', decidedBy: 'U0M', now: T0 + 1 });
    await fx.store.ledger.begin({ approvalId, fence: lease.fence, argsHash: call.argsHash, now: T0 + 2 });
    await fx.store.runs.appendTrace(RUN, [{ type: 'step_started', at: T0 }]);
    const finished: RunState = {
      ...advance(state, 1),
      status: 'completed',
      stopReason: 'completed',
      stopMessage: 'Completed.',
      answer: ['Restarted payments in staging.'],
    };
    await fx.store.runs.saveStep({
      runId: RUN,
      fence: lease.fence,
      state: finished,
      persisted: { messages: 6, evidence: 2 },
    });

    const found = await ttls();
    expect(Object.keys(found).sort()).toEqual(
      [
        `approval:${approvalId}`,
        'approvals',
        'evidence',
        'header',
        'lease',
        `ledger:${approvalId}`,
        'messages',
        'trace',
      ].sort(),
    );
    for (const [suffix, ttl] of Object.entries(found)) {
      if (suffix === 'lease') continue;
      expect(ttl, suffix).toBeGreaterThan(2 * DAY - 60_000);
      expect(ttl, suffix).toBeLessThanOrEqual(2 * DAY);
    }
    expect((await fx.store.runs.loadRun(RUN))?.finishedAt).toBe(finished.updatedAt);
    // A late trace entry after the finish inherits the TTL too.
    await fx.redis.del(fx.store.context.keys.run(RUN).trace);
    await fx.store.runs.appendTrace(RUN, [{ type: 'finished', at: T0 }]);
    expect(await fx.redis.pttl(fx.store.context.keys.run(RUN).trace)).toBeGreaterThan(DAY);
  });

  it('expireRun sets a TTL on a run that ended outside saveStep', async () => {
    await fx.store.runs.createRun(newState(RUN), slack);
    await fx.store.runs.expireRun(RUN, 5000);
    for (const ttl of Object.values(await ttls())) expect(ttl).toBeLessThanOrEqual(5000);
    await expect(fx.store.runs.expireRun('ghost')).rejects.toMatchObject({ code: 'not_found' });
  });

  it('trims the audit stream near its bound', async () => {
    const local = storeFixture({ auditMaxLength: 10 });
    try {
      await local.store.runs.createRun(realisticState(RUN), slack);
      const lease = await local.store.leases.acquire(RUN, 'w', 30_000);
      if (!lease.acquired) throw new Error('not acquired');
      const calls = Array.from({ length: 300 }, (_, i) => ({
        ...realisticState(RUN).turn!.pending[0]!,
        toolCallId: `c${i}`,
      }));
      const records = await local.store.approvals.createApprovals({
        runId: RUN,
        fence: lease.fence,
        requester: 'U0ALICE',
        now: T0,
        approvals: calls.map((call) => ({ call, approvers: { users: [], groups: [] }, expiresAt: T0 + DAY })),
      });
      for (const r of records)
        await local.store.approvals.decide({ approvalId: r.approvalId, decision: 'rejected', now: T0 });
      // MAXLEN ~ trims whole stream nodes (100 entries each by default), so the bound is approximate.
      expect(await local.redis.xlen(local.store.context.keys.audit)).toBeLessThan(300);
    } finally {
      await local.cleanup();
    }
  });
});
