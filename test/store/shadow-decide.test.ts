/**
 * shadowDecide on real Redis: only a shadow call takes it, the first of many concurrent clicks wins (from
 * several connections), the record stays closed and never gets a ledger entry, and the audit log has one
 * shadow_decision entry.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { GatedCall } from '../../src/loop/gated-calls.js';
import { approvalIdFor, StoreError } from '../../src/store/index.js';
import { type StoreFixture, storeFixture } from './redis-fixture.js';
import { realisticState, slack, T0 } from './run-state-fixture.js';

const RUN = 'run-shadow-decide';
const call = (id: string): GatedCall => ({
  toolCallId: id,
  tool: 'run_action',
  effect: 'write',
  args: { action: 'restart_service' },
  argsHash: 'b'.repeat(64),
  idempotent: false,
});
const SHADOW = approvalIdFor(RUN, 'call_shadow');
const ORDINARY = approvalIdFor(RUN, 'call_ordinary');

let fx: StoreFixture;
beforeEach(async () => {
  fx = storeFixture();
  await fx.store.runs.createRun(realisticState(RUN), slack);
  const lease = await fx.store.leases.acquire(RUN, 'w', 30_000);
  if (!lease.acquired) throw new Error('no lease');
  const approvers = { users: ['U0M'], groups: [] };
  await fx.store.approvals.createApprovals({
    runId: RUN,
    fence: lease.fence,
    requester: 'U0ALICE',
    now: T0,
    approvals: [
      {
        call: call('call_shadow'),
        approvers,
        expiresAt: T0 + 3_600_000,
        decided: { status: 'rejected', via: 'shadow', reason: 'shadow mode (x): not executed' },
      },
      { call: call('call_ordinary'), approvers, expiresAt: T0 + 3_600_000 },
    ],
  });
});
afterEach(async () => {
  await fx.cleanup();
});

describe('shadowDecide', () => {
  it('the first of many concurrent clicks wins; the record stays closed, with no ledger entry', async () => {
    const stores = [fx.store, fx.connect(), fx.connect()];
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        (stores[i % 3] ?? fx.store).approvals.shadowDecide({
          approvalId: SHADOW,
          decision: i % 2 === 0 ? 'would_approve' : 'would_reject',
          by: `U0P${i}`,
          now: T0 + 1_000 + i,
        }),
      ),
    );
    const winners = results.filter((r) => r.won);
    expect(winners).toHaveLength(1);
    const stored = await fx.store.approvals.get(SHADOW);
    expect(stored?.shadowDecision).toEqual(winners[0]?.record.shadowDecision);
    expect(stored).toMatchObject({ status: 'rejected', via: 'shadow', decidedBy: null });
    expect(await fx.store.ledger.get(SHADOW)).toBeNull();
    const events = (await fx.store.audit.recent()).filter((a) => a.entry.event === 'shadow_decision');
    expect(events).toHaveLength(1);
  });

  it('refuses an approval that is not a shadow call, and a missing one', async () => {
    const input = { decision: 'would_approve' as const, by: 'U0M', now: T0 + 5 };
    await expect(fx.store.approvals.shadowDecide({ approvalId: ORDINARY, ...input })).rejects.toMatchObject({
      code: 'not_shadow',
    });
    await expect(
      fx.store.approvals.shadowDecide({ approvalId: approvalIdFor(RUN, 'nope'), ...input }),
    ).rejects.toBeInstanceOf(StoreError);
    expect((await fx.store.approvals.get(ORDINARY))?.shadowDecision).toBeUndefined();
  });

  it('a person Approve on a shadow call changes nothing and opens no ledger entry', async () => {
    const result = await fx.store.approvals.decide({
      approvalId: SHADOW,
      decision: 'approved',
      decidedBy: 'U0M',
      now: T0 + 10,
    });
    expect(result.changed).toBe(false);
    expect(result.record).toMatchObject({ status: 'rejected', via: 'shadow' });
    expect(await fx.store.ledger.get(SHADOW)).toBeNull();
  });
});
