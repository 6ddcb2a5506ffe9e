/**
 * Quorum decisions in decideApproval-3: N distinct approvers, the same person twice counted once, a single
 * rejection rejecting, the ledger opened exactly when the Nth approval lands (so execution can start only
 * then, and once), concurrent approvals, and an unconfirmed vote withdrawn (REDIS_WAIT_REPLICAS).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatedCall } from '../../src/loop/gated-calls.js';
import { approvalIdFor, createStore } from '../../src/store/index.js';
import { type StoreFixture, storeFixture } from './redis-fixture.js';
import { realisticState, slack, T0 } from './run-state-fixture.js';

const RUN = 'run-quorum';
const HOUR = 3_600_000;
let fx: StoreFixture;
let calls = 0;

beforeAll(async () => {
  fx = storeFixture();
  await fx.store.runs.createRun(realisticState(RUN), slack);
});
afterAll(async () => {
  await fx.cleanup();
});

/** A fresh pending approval needing `quorum` approvals. */
async function asked(quorum: number): Promise<string> {
  calls++;
  const call: GatedCall = {
    toolCallId: `call_${calls}`,
    tool: 'run_action',
    effect: 'write',
    args: { n: calls },
    argsHash: 'c'.repeat(64),
    idempotent: false,
  };
  const lease = await fx.store.leases.acquire(RUN, 'setup', 30_000);
  if (!lease.acquired) throw new Error('lease not acquired');
  await fx.store.approvals.createApprovals({
    runId: RUN,
    fence: lease.fence,
    requester: 'U0ALICE',
    now: T0,
    approvals: [
      {
        call,
        approvers: { users: [], groups: ['S0LEADS'] },
        expiresAt: T0 + HOUR,
        policy: { quorum, rule: 'rule 2 of run_action (prod restarts)' },
      },
    ],
  });
  await fx.store.leases.release(RUN, lease.fence);
  return approvalIdFor(RUN, call.toolCallId);
}

const approve = (approvalId: string, by: string, store = fx.store) =>
  store.approvals.decide({ approvalId, decision: 'approved', decidedBy: by, now: T0 + 1_000 });

describe('quorum', () => {
  it('stays pending with progress until the second distinct approver; the same person twice counts once', async () => {
    const id = await asked(2);
    const first = await approve(id, 'U0BOB');
    expect(first).toMatchObject({ changed: false, won: false, vote: 'counted' });
    expect(first.record.status).toBe('pending');
    expect(first.record.votes).toEqual([expect.objectContaining({ by: 'U0BOB', at: T0 + 1_000 })]);
    expect(await fx.store.ledger.get(id)).toBeNull();

    const again = await approve(id, 'U0BOB');
    expect(again).toMatchObject({ changed: false, won: false, vote: 'repeated' });
    expect(again.record.votes).toHaveLength(1);
    expect(await fx.store.ledger.get(id)).toBeNull();

    const second = await approve(id, 'U0CAROL');
    expect(second).toMatchObject({ changed: true, won: true, vote: 'counted' });
    expect(second.record).toMatchObject({ status: 'approved', decidedBy: 'U0CAROL' });
    expect(second.record.votes?.map((v) => v.by)).toEqual(['U0BOB', 'U0CAROL']);
    expect(await fx.store.ledger.get(id)).toMatchObject({ status: 'approved', argsHash: 'c'.repeat(64) });

    // Every approval is audited: the first as a vote (1/2), the last as the decision (2/2).
    const entries = (await fx.store.audit.recent(10)).map((e) => e.entry).filter((e) => e.approvalId === id);
    expect(entries.map((e) => [e.event, e.decision, e.decider, e.quorum, e.votes])).toEqual([
      ['decision', 'approved', 'U0CAROL', '2/2', 'U0BOB,U0CAROL'],
      ['vote', 'approved', 'U0BOB', '1/2', 'U0BOB'],
    ]);
    expect(entries[0]?.rule).toBe('rule 2 of run_action (prod restarts)');
  });

  it('a single rejection rejects, whatever approvals came before', async () => {
    const id = await asked(3);
    await approve(id, 'U0BOB');
    const rejected = await fx.store.approvals.decide({
      approvalId: id,
      decision: 'rejected',
      decidedBy: 'U0DAN',
      reason: 'not now',
      now: T0 + 2_000,
    });
    expect(rejected).toMatchObject({ changed: true, won: true, record: { status: 'rejected' } });
    expect(await approve(id, 'U0CAROL')).toMatchObject({ changed: false, won: false, vote: null });
    expect(await fx.store.ledger.get(id)).toBeNull();
  });

  it('concurrent approvals by many people approve once, when the Nth lands', async () => {
    const id = await asked(3);
    const stores = Array.from({ length: 6 }, () => fx.connect());
    const people = ['U1', 'U2', 'U3', 'U4', 'U5', 'U6'];
    const results = await Promise.all(people.map((by, i) => approve(id, by, stores[i])));
    expect(results.filter((r) => r.won)).toHaveLength(1);
    expect(results.filter((r) => r.vote === 'counted')).toHaveLength(3);
    const record = await fx.store.approvals.get(id);
    expect(record?.status).toBe('approved');
    expect(record?.votes).toHaveLength(3);
  });

  it('property: approved exactly when N distinct people approved, the ledger opened then and only then', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.constantFrom('UA', 'UB', 'UC', 'UD', 'UE'), { minLength: 0, maxLength: 10 }),
        async (quorum, clicks) => {
          const id = await asked(quorum);
          let wins = 0;
          const seen = new Set<string>();
          for (const by of clicks) {
            const result = await approve(id, by);
            if (result.won) wins++;
            if (seen.size < quorum) seen.add(by);
            const ledger = await fx.store.ledger.get(id);
            const reached = seen.size >= quorum;
            expect(result.record.status).toBe(reached ? 'approved' : 'pending');
            expect(ledger !== null).toBe(reached);
          }
          expect(wins).toBe(seen.size >= quorum ? 1 : 0);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('a vote no replica confirmed is withdrawn: not counted, nothing audited, the approver told to retry', async () => {
    const id = await asked(2);
    const unconfirmed = createStore(fx.redis, {
      prefix: `{${fx.prefix}}`,
      waitReplicas: 1,
      waitTimeoutMs: 1,
    });
    await expect(approve(id, 'U0BOB', unconfirmed)).rejects.toMatchObject({ code: 'durability_unconfirmed' });
    expect((await fx.store.approvals.get(id))?.votes).toBeUndefined();
    await approve(id, 'U0BOB');
    // The vote completing the quorum, unconfirmed: the approval is pending again with one vote.
    await expect(approve(id, 'U0CAROL', unconfirmed)).rejects.toMatchObject({
      code: 'durability_unconfirmed',
    });
    const record = await fx.store.approvals.get(id);
    expect(record?.status).toBe('pending');
    expect(record?.votes?.map((v) => v.by)).toEqual(['U0BOB']);
    expect(await fx.store.ledger.get(id)).toBeNull();
    expect(await approve(id, 'U0CAROL')).toMatchObject({ won: true });
  });
});
