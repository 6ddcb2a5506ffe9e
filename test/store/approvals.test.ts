import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { GatedCall } from '../../src/loop/gated-calls.js';
import { RETRY_REASON } from '../../src/store/approvals/approval-store.js';
import { approvalIdFor, nextRoundOf, REAPPROVE_REASON, roundOf, type Store } from '../../src/store/index.js';
import { type StoreFixture, storeFixture } from './redis-fixture.js';
import { realisticState, slack, T0 } from './run-state-fixture.js';

const RUN = 'run-appr';
const HOUR = 3_600_000;
const approvers = { users: ['U0MANAGER'], groups: ['S0SRE'] };

const gated = (id: string, tool = 'run_action'): GatedCall => ({
  toolCallId: id,
  tool,
  effect: 'write',
  args: { action: 'restart_service', service: 'payments', env: 'staging', id },
  argsHash: `${id}-hash`.padEnd(64, '0'),
  preview: `restart payments (${id})`,
  reason: 'error rate 27 %',
  idempotent: false,
});

let fx: StoreFixture;
let fence: number;
beforeEach(async () => {
  fx = storeFixture();
  await fx.store.runs.createRun(realisticState(RUN), slack);
  const lease = await fx.store.leases.acquire(RUN, 'worker-a', 30_000);
  if (!lease.acquired) throw new Error('not acquired');
  fence = lease.fence;
});
afterEach(async () => {
  await fx.cleanup();
});

async function pause(store: Store = fx.store, calls = [gated('call_3')]) {
  return store.approvals.createApprovals({
    runId: RUN,
    fence,
    requester: 'U0ALICE',
    now: T0,
    approvals: calls.map((call) => ({ call, approvers, expiresAt: T0 + HOUR })),
  });
}

describe('createApprovals', () => {
  it('stores one pending record per gated call, listed for the run and in the pending index', async () => {
    const records = await pause(fx.store, [gated('call_3'), gated('call_4', 'post_message')]);
    expect(records.map((r) => r.approvalId)).toEqual([
      approvalIdFor(RUN, 'call_3'),
      approvalIdFor(RUN, 'call_4'),
    ]);
    expect(records[0]).toEqual({
      approvalId: approvalIdFor(RUN, 'call_3'),
      runId: RUN,
      toolCallId: 'call_3',
      tool: 'run_action',
      effect: 'write',
      argsHash: gated('call_3').argsHash,
      args: gated('call_3').args,
      preview: 'restart payments (call_3)',
      reason: 'error rate 27 %',
      idempotent: false,
      requester: 'U0ALICE',
      approvers,
      createdAt: T0,
      expiresAt: T0 + HOUR,
      status: 'pending',
      decidedBy: null,
      decidedAt: null,
      decisionReason: null,
      card: null,
    });
    expect(await fx.store.approvals.listForRun(RUN)).toHaveLength(2);
    expect((await fx.store.approvals.listPending(T0)).map((r) => r.toolCallId).sort()).toEqual([
      'call_3',
      'call_4',
    ]);
  });

  it('is idempotent: writing the same pause again keeps the decision already made', async () => {
    const [record] = await pause();
    await fx.store.approvals.decide({
      approvalId: record!.approvalId,
      decision: 'approved',
      decidedBy: 'U0M',
      now: T0,
    });
    const again = await pause();
    expect(again[0]?.status).toBe('approved');
    expect(await fx.store.approvals.listForRun(RUN)).toHaveLength(1);
  });

  it('keeps the pending index right when a pause is written again: decided out, pending at its first expiry', async () => {
    const [decided, waiting] = await pause(fx.store, [gated('call_3'), gated('call_4')]);
    await fx.store.approvals.decide({
      approvalId: decided!.approvalId,
      decision: 'approved',
      decidedBy: 'U0M',
      now: T0,
    });
    // Another index entry is lost, as if a process died between the script and the index write.
    await fx.redis.zrem(fx.store.context.keys.pendingApprovals, waiting!.approvalId);
    const again = await fx.store.approvals.createApprovals({
      runId: RUN,
      fence,
      requester: 'U0ALICE',
      now: T0 + HOUR,
      approvals: [gated('call_3'), gated('call_4')].map((call) => ({
        call,
        approvers,
        expiresAt: T0 + 5 * HOUR,
      })),
    });
    expect(again.map((r) => [r.status, r.expiresAt])).toEqual([
      ['approved', T0 + HOUR],
      ['pending', T0 + HOUR],
    ]);
    const index = await fx.redis.zrange(fx.store.context.keys.pendingApprovals, 0, -1, 'WITHSCORES');
    expect(index).toEqual([waiting!.approvalId, String(T0 + HOUR)]);
  });

  it('refuses a caller without the lease', async () => {
    await fx.store.leases.release(RUN, fence);
    await expect(pause()).rejects.toMatchObject({ code: 'lease_lost' });
    expect(await fx.store.approvals.listForRun(RUN)).toHaveLength(0);
    // The index entry written beside the refused script points nowhere; listings drop it.
    expect(await fx.store.approvals.listPending(T0)).toEqual([]);
    expect(await fx.redis.zcard(fx.store.context.keys.pendingApprovals)).toBe(0);
  });
});

describe('decideApproval', () => {
  it('lets exactly one of 20 concurrent decisions win', async () => {
    const [record] = await pause();
    const stores = [fx.store, fx.connect(), fx.connect(), fx.connect(), fx.connect()];
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (stores[i % stores.length] as Store).approvals.decide({
          approvalId: record!.approvalId,
          decision: i % 2 === 0 ? 'approved' : 'rejected',
          decidedBy: `U${i}`,
          now: T0 + 1000,
        }),
      ),
    );
    const winners = results.filter((r) => r.won);
    expect(winners).toHaveLength(1);
    expect(results.filter((r) => r.changed)).toHaveLength(1);
    const final = await fx.store.approvals.get(record!.approvalId);
    expect(final?.status).toBe(winners[0]?.record.status);
    expect(final?.decidedBy).toBe(winners[0]?.record.decidedBy);
    for (const r of results) expect(r.record.status).toBe(final?.status);
    expect(await fx.store.audit.recent()).toHaveLength(1);
  });

  it('records who decided, why and when; writes the audit log; leaves the pending index', async () => {
    const [record] = await pause();
    const result = await fx.store.approvals.decide({
      approvalId: record!.approvalId,
      decision: 'rejected',
      decidedBy: 'U0MANAGER',
      reason: 'not during the freeze',
      now: T0 + 60_000,
      permalink: 'https://example.slack.com/archives/C0OPS/p1767000000000100',
    });
    expect(result).toMatchObject({ changed: true, won: true });
    expect(result.record).toMatchObject({
      status: 'rejected',
      decidedBy: 'U0MANAGER',
      decidedAt: T0 + 60_000,
      decisionReason: 'not during the freeze',
    });
    expect(await fx.store.approvals.listPending(T0)).toEqual([]);
    expect(await fx.store.ledger.get(record!.approvalId)).toBeNull();
    const [audit] = await fx.store.audit.recent();
    expect(audit?.entry).toEqual({
      approvalId: record!.approvalId,
      runId: RUN,
      tool: 'run_action',
      argsHash: gated('call_3').argsHash,
      requester: 'U0ALICE',
      decider: 'U0MANAGER',
      decision: 'rejected',
      reason: 'not during the freeze',
      requestedAt: T0,
      decidedAt: T0 + 60_000,
      permalink: 'https://example.slack.com/archives/C0OPS/p1767000000000100',
      // Nothing of rules, quorums, grants or edits was involved.
      event: 'decision',
      via: '',
      rule: '',
      approversFrom: '',
      quorum: '',
      votes: '',
      grantId: '',
      editedArgsHash: '',
      originalArgsHash: '',
      note: '',
      breakGlass: '',
      incident: '',
      reviewed: '',
    });
  });

  it('expires an approval decided at or after its expiry instead of approving it', async () => {
    const [record] = await pause();
    const late = await fx.store.approvals.decide({
      approvalId: record!.approvalId,
      decision: 'approved',
      decidedBy: 'U0MANAGER',
      now: T0 + HOUR,
    });
    expect(late).toMatchObject({ changed: true, won: false });
    expect(late.record.status).toBe('expired');
    expect(await fx.store.ledger.get(record!.approvalId)).toBeNull();
    // The expire job arriving afterwards changes nothing.
    const job = await fx.store.approvals.decide({
      approvalId: record!.approvalId,
      decision: 'expired',
      now: T0 + HOUR,
    });
    expect(job).toMatchObject({ changed: false, won: false });
  });

  it('opens the ledger entry when approved', async () => {
    const [record] = await pause();
    await fx.store.approvals.decide({
      approvalId: record!.approvalId,
      decision: 'approved',
      decidedBy: 'U0M',
      now: T0,
    });
    expect(await fx.store.ledger.get(record!.approvalId)).toMatchObject({
      status: 'approved',
      attempts: 0,
      argsHash: gated('call_3').argsHash,
    });
  });

  it('recognises a resent decision (same nonce, reply lost) as the one that won', async () => {
    const [record] = await pause();
    const keys = [
      fx.store.context.keys.approval(record!.approvalId),
      fx.store.context.keys.ledger(record!.approvalId),
      fx.store.context.keys.run(RUN).header,
    ];
    const args = ['approved', 'U0M', '', T0, 'nonce-1'];
    const first = (await fx.store.context.script('decideApproval', keys, args)) as unknown[];
    const resent = (await fx.store.context.script('decideApproval', keys, args)) as unknown[];
    expect(first.slice(0, 2)).toEqual([1, 1]);
    expect(resent.slice(0, 2)).toEqual([1, 1]);
    const other = (await fx.store.context.script('decideApproval', keys, [
      'rejected',
      'U0X',
      '',
      T0,
      'nonce-2',
    ])) as unknown[];
    expect(other.slice(0, 2)).toEqual([0, 0]);
  });

  /** A run's final save stored while its approval is still pending: the window before cancelPending. */
  async function endWithApprovalPending(status: 'cancelled' | 'failed') {
    const [record] = await pause();
    const state = realisticState(RUN);
    await fx.store.runs.saveStep({
      runId: RUN,
      fence,
      state: {
        ...state,
        status,
        stopReason: status === 'cancelled' ? 'cancelled' : 'model_error',
        stopMessage: status === 'cancelled' ? 'Cancelled.' : 'The model failed.',
        updatedAt: T0 + 5,
      },
      persisted: { messages: state.messages.length, evidence: state.evidence.length },
    });
    return record!.approvalId;
  }

  for (const status of ['cancelled', 'failed'] as const) {
    it(`refuses run_ended for an approve or reject of a pending approval once the run is ${status}`, async () => {
      const approvalId = await endWithApprovalPending(status);
      for (const decision of ['approved', 'rejected'] as const) {
        await expect(
          fx.store.approvals.decide({ approvalId, decision, decidedBy: 'U0MANAGER', now: T0 + 10 }),
        ).rejects.toMatchObject({ code: 'run_ended' });
      }
      expect(await fx.store.approvals.get(approvalId)).toMatchObject({ status: 'pending', decidedBy: null });
      expect(await fx.store.ledger.get(approvalId)).toBeNull();
      expect(await fx.store.audit.recent()).toEqual([]);
      // The cancelling that follows the final save still closes it.
      const cancelled = await fx.store.approvals.cancelPending(RUN, 'U0ALICE', 'run ended', T0 + 11);
      expect(cancelled.map((r) => r.status)).toEqual(['cancelled']);
    });
  }

  it('fails not_found for an unknown approval', async () => {
    await expect(
      fx.store.approvals.decide({ approvalId: approvalIdFor(RUN, 'nope'), decision: 'approved', now: T0 }),
    ).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('reapprove as Retry (after a transient failure that was not repeated)', () => {
  /** A pause, approved and run, whose run failed with the given result. */
  async function failedWith(error: { code: string; message: string; transient?: boolean }) {
    const [record] = await pause();
    const approvalId = record!.approvalId;
    await fx.store.approvals.setCard(approvalId, { channel: 'C0OPS', ts: '1767000000.000300' });
    await fx.store.approvals.decide({ approvalId, decision: 'approved', decidedBy: 'U0MANAGER', now: T0 });
    await fx.store.ledger.begin({ approvalId, fence, argsHash: gated('call_3').argsHash, now: T0 + 1 });
    await fx.store.ledger.finish({
      approvalId,
      fence,
      outcome: 'failed',
      result: { ok: false, error },
      now: T0 + 2,
    });
    return approvalId;
  }

  it('a transient failure may be retried: the next round is approved by the clicker, once', async () => {
    const approvalId = await failedWith({ code: 'http_status', message: '503', transient: true });
    const [first, second] = await Promise.all([
      fx.store.approvals.reapprove({ approvalId, decidedBy: 'U0SRE', now: T0 + 60_000 }),
      fx.store.approvals.reapprove({ approvalId, decidedBy: 'U0SRE', now: T0 + 60_001 }),
    ]);
    expect([first.won, second.won].sort()).toEqual([false, true]);
    expect(first.record).toMatchObject({
      approvalId: nextRoundOf(approvalId),
      status: 'approved',
      decidedBy: 'U0SRE',
      decisionReason: RETRY_REASON,
    });
    expect(await fx.store.ledger.get(nextRoundOf(approvalId))).toMatchObject({ status: 'approved' });
    expect((await fx.store.ledger.get(approvalId))?.status).toBe('failed');
  });

  it('a permanent failure may not: not_unknown, nothing created', async () => {
    const approvalId = await failedWith({ code: 'http_status', message: '400' });
    await expect(
      fx.store.approvals.reapprove({ approvalId, decidedBy: 'U0SRE', now: T0 + 60_000 }),
    ).rejects.toMatchObject({ code: 'not_unknown' });
    expect(await fx.store.approvals.get(nextRoundOf(approvalId))).toBeNull();
  });
});

describe('reapprove (Approve again after an unknown outcome)', () => {
  /** A pause, approved, started and left unknown by a crash: what "Approve again" is offered on. */
  async function unknownOutcome() {
    const [record] = await pause();
    const approvalId = record!.approvalId;
    await fx.store.approvals.setCard(approvalId, { channel: 'C0OPS', ts: '1767000000.000300' });
    await fx.store.approvals.decide({ approvalId, decision: 'approved', decidedBy: 'U0MANAGER', now: T0 });
    await fx.store.ledger.begin({ approvalId, fence, argsHash: gated('call_3').argsHash, now: T0 + 1 });
    await fx.store.ledger.markOutcomeUnknown(approvalId, fence, T0 + 2);
    return approvalId;
  }

  it('creates the next round approved by the clicker, same call and card, with its ledger entry, audited', async () => {
    const approvalId = await unknownOutcome();
    const again = await fx.store.approvals.reapprove({ approvalId, decidedBy: 'U0SRE', now: T0 + 60_000 });
    const next = nextRoundOf(approvalId);
    expect(again.won).toBe(true);
    expect(roundOf(next)).toBe(2);
    expect(again.record).toMatchObject({
      approvalId: next,
      runId: RUN,
      toolCallId: 'call_3',
      args: gated('call_3').args,
      argsHash: gated('call_3').argsHash,
      status: 'approved',
      decidedBy: 'U0SRE',
      decidedAt: T0 + 60_000,
      decisionReason: REAPPROVE_REASON,
      card: { channel: 'C0OPS', ts: '1767000000.000300' },
    });
    expect(await fx.store.approvals.get(next)).toEqual(again.record);
    expect(await fx.store.ledger.get(next)).toMatchObject({ status: 'approved', attempts: 0 });
    // The earlier round is kept as it was: its outcome stays unknown.
    expect((await fx.store.ledger.get(approvalId))?.status).toBe('outcome_unknown');
    expect((await fx.store.approvals.listForRun(RUN)).map((r) => r.approvalId)).toEqual([approvalId, next]);
    const [audit] = await fx.store.audit.recent();
    expect(audit?.entry).toMatchObject({ approvalId: next, decider: 'U0SRE', decision: 'approved' });
  });

  it('lets the first of several clicks win; the others change nothing', async () => {
    const approvalId = await unknownOutcome();
    const clicks = await Promise.all(
      ['U0A', 'U0B', 'U0C', 'U0D'].map((user) =>
        fx.store.approvals.reapprove({ approvalId, decidedBy: user, now: T0 + 60_000 }),
      ),
    );
    expect(clicks.filter((c) => c.won)).toHaveLength(1);
    const winner = clicks.find((c) => c.won)!.record.decidedBy;
    expect(new Set(clicks.map((c) => c.record.decidedBy))).toEqual(new Set([winner]));
    expect(await fx.store.audit.recent()).toHaveLength(2);
  });

  it('refuses a call whose outcome is known, or that never ran, and an approval that does not exist', async () => {
    const [record] = await pause();
    const approvalId = record!.approvalId;
    await expect(
      fx.store.approvals.reapprove({ approvalId, decidedBy: 'U0SRE', now: T0 }),
    ).rejects.toMatchObject({ code: 'not_unknown' });
    await fx.store.approvals.decide({ approvalId, decision: 'approved', decidedBy: 'U0MANAGER', now: T0 });
    await fx.store.ledger.begin({ approvalId, fence, argsHash: gated('call_3').argsHash, now: T0 + 1 });
    await fx.store.ledger.finish({
      approvalId,
      fence,
      outcome: 'succeeded',
      result: { ok: true, data: 'restarted' },
      now: T0 + 2,
    });
    await expect(
      fx.store.approvals.reapprove({ approvalId, decidedBy: 'U0SRE', now: T0 }),
    ).rejects.toMatchObject({ code: 'not_unknown' });
    expect(await fx.store.approvals.get(nextRoundOf(approvalId))).toBeNull();
    await expect(
      fx.store.approvals.reapprove({ approvalId: approvalIdFor(RUN, 'nope'), decidedBy: 'U0SRE', now: T0 }),
    ).rejects.toMatchObject({ code: 'not_found' });
  });

  it('needs the quorum of the first run; a collection not completed in time starts again', async () => {
    const [record] = await fx.store.approvals.createApprovals({
      runId: RUN,
      fence,
      requester: 'U0ALICE',
      now: T0,
      approvals: [{ call: gated('call_3'), approvers, expiresAt: T0 + HOUR, policy: { quorum: 2 } }],
    });
    const approvalId = record!.approvalId;
    for (const by of ['U0A', 'U0B']) {
      await fx.store.approvals.decide({ approvalId, decision: 'approved', decidedBy: by, now: T0 });
    }
    await fx.store.ledger.begin({ approvalId, fence, argsHash: gated('call_3').argsHash, now: T0 + 1 });
    await fx.store.ledger.markOutcomeUnknown(approvalId, fence, T0 + 2);
    const next = nextRoundOf(approvalId);
    const again = (by: string, now: number) =>
      fx.store.approvals.reapprove({ approvalId, decidedBy: by, now });

    const first = await again('U0A', T0 + 10);
    expect(first).toMatchObject({ won: false, vote: 'counted', record: { status: 'pending', quorum: 2 } });
    expect(first.record.votes?.map((v) => v.by)).toEqual(['U0A']);
    expect(first.record.expiresAt).toBe(T0 + 10 + HOUR);
    expect(await fx.store.ledger.get(next)).toBeNull();
    // Too late for U0A's click: U0B's starts the collection again, alone.
    const late = await again('U0B', T0 + 10 + HOUR);
    expect(late).toMatchObject({ won: false, vote: 'counted', record: { status: 'pending' } });
    expect(late.record.votes?.map((v) => v.by)).toEqual(['U0B']);
    expect(await again('U0B', T0 + HOUR + 20)).toMatchObject({ won: false, vote: 'repeated' });
    const done = await again('U0A', T0 + HOUR + 30);
    expect(done).toMatchObject({
      won: true,
      vote: 'counted',
      record: { status: 'approved', decidedBy: 'U0A', decisionReason: REAPPROVE_REASON },
    });
    expect(await fx.store.ledger.get(next)).toMatchObject({ status: 'approved' });
    expect(await again('U0C', T0 + HOUR + 40)).toMatchObject({ won: false, vote: null });
    const events = (await fx.store.audit.recent(3)).map((a) => [a.entry.event, a.entry.decider]);
    expect(events).toEqual([
      ['decision', 'U0A'],
      ['vote', 'U0B'],
      ['vote', 'U0A'],
    ]);
  });

  it('approves running again exactly when the quorum of distinct approvers clicked, with one winner (property)', async () => {
    let calls = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.array(fc.constantFrom('U0A', 'U0B', 'U0C', 'U0D'), { minLength: 1, maxLength: 8 }),
        async (quorum, clicks) => {
          const call = gated(`call_p${calls++}`);
          const [record] = await fx.store.approvals.createApprovals({
            runId: RUN,
            fence,
            requester: 'U0ALICE',
            now: T0,
            approvals: [{ call, approvers, expiresAt: T0 + HOUR, policy: { quorum } }],
          });
          const approvalId = record!.approvalId;
          for (const by of ['U0X', 'U0Y', 'U0Z'].slice(0, quorum)) {
            await fx.store.approvals.decide({ approvalId, decision: 'approved', decidedBy: by, now: T0 });
          }
          await fx.store.ledger.begin({ approvalId, fence, argsHash: call.argsHash, now: T0 + 1 });
          await fx.store.ledger.markOutcomeUnknown(approvalId, fence, T0 + 2);
          const results = [];
          for (const [i, by] of clicks.entries()) {
            results.push(await fx.store.approvals.reapprove({ approvalId, decidedBy: by, now: T0 + 10 + i }));
          }
          // The click that completes the quorum is the first at which that many distinct people clicked.
          const seen = new Set<string>();
          const completing = clicks.findIndex((by) => seen.add(by).size === quorum);
          expect(results.map((r) => r.won)).toEqual(clicks.map((_, i) => i === completing));
          const next = await fx.store.approvals.get(nextRoundOf(approvalId));
          expect(next?.status).toBe(completing >= 0 ? 'approved' : 'pending');
          expect((await fx.store.ledger.get(nextRoundOf(approvalId)))?.status).toBe(
            completing >= 0 ? 'approved' : undefined,
          );
        },
      ),
      { numRuns: 25 },
    );
  });

  it('keys of the new round expire with the run', async () => {
    const approvalId = await unknownOutcome();
    await fx.store.context.redis.pexpire(fx.store.context.keys.approval(approvalId), 50_000);
    const { record } = await fx.store.approvals.reapprove({ approvalId, decidedBy: 'U0SRE', now: T0 });
    const ttl = (key: string) => fx.store.context.redis.pttl(key);
    expect(await ttl(fx.store.context.keys.approval(record.approvalId))).toBeGreaterThan(40_000);
    expect(await ttl(fx.store.context.keys.ledger(record.approvalId))).toBeGreaterThan(40_000);
  });
});

describe('cancel, cards and listings', () => {
  it('cancels pending approvals of a run and keeps decided ones', async () => {
    const [a, b] = await pause(fx.store, [gated('call_3'), gated('call_4')]);
    await fx.store.approvals.decide({
      approvalId: a!.approvalId,
      decision: 'approved',
      decidedBy: 'U0M',
      now: T0,
    });
    const cancelled = await fx.store.approvals.cancelPending(RUN, 'U0ALICE', 'run cancelled', T0 + 5);
    expect(cancelled.map((r) => r.approvalId)).toEqual([b!.approvalId]);
    expect((await fx.store.approvals.get(a!.approvalId))?.status).toBe('approved');
    expect((await fx.store.approvals.get(b!.approvalId))?.status).toBe('cancelled');
    expect(await fx.store.approvals.listPending(T0)).toEqual([]);
  });

  it('records the card coordinates', async () => {
    const [record] = await pause();
    expect(
      await fx.store.approvals.setCard(record!.approvalId, { channel: 'C0OPS', ts: '1767000002.0003' }),
    ).toBe(true);
    expect((await fx.store.approvals.get(record!.approvalId))?.card).toEqual({
      channel: 'C0OPS',
      ts: '1767000002.0003',
    });
    expect(await fx.store.approvals.setCard(approvalIdFor(RUN, 'nope'), { channel: 'C', ts: '1' })).toBe(
      false,
    );
    expect(await fx.store.approvals.get(approvalIdFor(RUN, 'nope'))).toBeNull();
  });

  it('lists pending approvals by expiry and drops decided ones from the index', async () => {
    await pause(fx.store, [gated('call_3')]);
    const [later] = await fx.store.approvals.createApprovals({
      runId: RUN,
      fence,
      requester: 'U0ALICE',
      now: T0,
      approvals: [{ call: gated('call_9'), approvers, expiresAt: T0 + 2 * HOUR }],
    });
    expect((await fx.store.approvals.listPending(T0)).map((r) => r.toolCallId)).toEqual(['call_3', 'call_9']);
    expect((await fx.store.approvals.listPending(T0 + HOUR + 1)).map((r) => r.toolCallId)).toEqual([
      'call_9',
    ]);
    // An index entry whose record changed behind its back (no zrem) is skipped and removed.
    await fx.redis.hset(fx.store.context.keys.approval(later!.approvalId), 'status', 'rejected');
    expect(await fx.store.approvals.listPending(T0)).toHaveLength(1);
    expect(await fx.redis.zcard(fx.store.context.keys.pendingApprovals)).toBe(1);
  });

  it('lists recent runs of a channel and of a requester', async () => {
    const other = {
      ...realisticState('run-2'),
      createdAt: T0 + 10,
      status: 'completed' as const,
      stopReason: 'completed' as const,
      stopMessage: 'Completed.',
    };
    await fx.store.runs.createRun(other, slack);
    const byChannel = await fx.store.index.recent({ channel: { teamId: 'T0TEAM', channelId: 'C0OPS' } });
    expect(byChannel.map((r) => [r.runId, r.status, r.stopReason])).toEqual([
      ['run-2', 'completed', 'completed'],
      [RUN, 'awaiting_approval', null],
    ]);
    const byUser = await fx.store.index.recent({ user: { teamId: 'T0TEAM', userId: 'U0ALICE' } }, 1);
    expect(byUser.map((r) => r.runId)).toEqual(['run-2']);
    await fx.redis.del(fx.store.context.keys.run('run-2').header);
    expect(
      (await fx.store.index.recent({ user: { teamId: 'T0TEAM', userId: 'U0ALICE' } })).map((r) => r.runId),
    ).toEqual([RUN]);
  });
});
