/**
 * The store side of plans: the ledger's plan_blocked state and plan hashes (blockExecution-2,
 * beginExecution-2) and the round that asks again when a plan changed (askAgainForPlan-5).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CallPlan, GatedCall } from '../../src/loop/gated-calls.js';
import { planHash } from '../../src/loop/plan.js';
import type { ToolResult } from '../../src/loop/tool-result.js';
import { StoreError } from '../../src/store/errors.js';
import { approvalIdFor, nextRoundOf } from '../../src/store/ids.js';
import { type StoreFixture, storeFixture } from './redis-fixture.js';
import { realisticState, slack, T0 } from './run-state-fixture.js';

const RUN = 'run-plans';
const planOf = (text: string): CallPlan => ({ ok: true, text, hash: planHash(text) });
const APPROVED = planOf('web: 3 -> 5');
const CURRENT = planOf('web: 4 -> 5');
const call: GatedCall = {
  toolCallId: 'call_1',
  tool: 'run_action',
  effect: 'write',
  args: { action: 'scale', params: { to: 5 } },
  argsHash: 'b'.repeat(64),
  plan: APPROVED,
  idempotent: false,
};
const approvalId = approvalIdFor(RUN, 'call_1');
const blockedResult: ToolResult = { ok: false, error: { code: 'plan_changed', message: 'changed' } };

let fx: StoreFixture;
let fence: number;

beforeEach(async () => {
  fx = storeFixture();
  await fx.store.runs.createRun(realisticState(RUN), slack);
  const lease = await fx.store.leases.acquire(RUN, 'worker-a', 30_000);
  if (!lease.acquired) throw new Error('not acquired');
  fence = lease.fence;
  await fx.store.approvals.createApprovals({
    runId: RUN,
    fence,
    requester: 'U0ALICE',
    now: T0,
    approvals: [
      { call, approvers: { users: ['U0M'], groups: [] }, expiresAt: T0 + 3_600_000, policy: { quorum: 2 } },
    ],
  });
});
afterEach(async () => {
  await fx.cleanup();
});

const approve = () =>
  fx.store.approvals.decide({ approvalId, decision: 'approved', decidedBy: 'U0M', now: T0 + 1 });
const plans = { approved: APPROVED.ok ? APPROVED.hash : null, current: CURRENT.ok ? CURRENT.hash : null };

describe('plans in the store', () => {
  it('keeps the plan shown with the approval', async () => {
    expect((await fx.store.approvals.get(approvalId))?.plan).toEqual(APPROVED);
  });

  it('blocks an approved entry as plan_blocked with both hashes; a begun entry is left alone', async () => {
    await fx.store.approvals.decide({ approvalId, decision: 'approved', decidedBy: 'U0M', now: T0 + 1 });
    await fx.store.approvals.decide({ approvalId, decision: 'approved', decidedBy: 'U0N', now: T0 + 1 });
    const blocked = await fx.store.ledger.block({
      approvalId,
      fence,
      result: blockedResult,
      plans,
      now: T0 + 2,
    });
    expect(blocked.changed).toBe(true);
    expect(blocked.entry).toMatchObject({
      status: 'plan_blocked',
      approvedPlanHash: plans.approved,
      currentPlanHash: plans.current,
      result: blockedResult,
    });
    // The plan is the approved one again (a redelivered job): it may begin, and records both plans.
    const began = await fx.store.ledger.begin({
      approvalId,
      fence,
      argsHash: call.argsHash,
      now: T0 + 3,
      plans: { approved: plans.approved, current: plans.approved },
    });
    expect(began.entry).toMatchObject({ status: 'executing', currentPlanHash: plans.approved });
    const again = await fx.store.ledger.block({
      approvalId,
      fence,
      result: blockedResult,
      plans,
      now: T0 + 4,
    });
    expect(again).toMatchObject({ changed: false, entry: { status: 'executing' } });
  });

  it('asks again in a fresh round: pending, no votes, the new plan, the old round superseded; a resend returns it', async () => {
    await approve();
    await fx.store.approvals.decide({ approvalId, decision: 'approved', decidedBy: 'U0N', now: T0 + 1 });
    const old = (await fx.store.approvals.get(approvalId))!;
    expect(old.status).toBe('approved');
    const next = await fx.store.approvals.askAgainForPlan(old, CURRENT, T0 + 10);
    expect(next).toMatchObject({
      approvalId: nextRoundOf(approvalId),
      status: 'pending',
      plan: CURRENT,
      quorum: 2,
      decidedBy: null,
      replanOf: { approvalId, plan: APPROVED },
      createdAt: T0 + 10,
      expiresAt: T0 + 10 + 3_600_000,
    });
    expect(next.votes).toBeUndefined();
    expect(await fx.store.approvals.get(approvalId)).toMatchObject({
      status: 'superseded',
      editedTo: next.approvalId,
    });
    expect((await fx.store.approvals.latest(approvalId))?.approvalId).toBe(next.approvalId);
    expect(await fx.store.approvals.askAgainForPlan(old, CURRENT, T0 + 20)).toEqual(next);
    const audit = await fx.store.audit.recent(10);
    expect(audit.map((e) => e.entry.event)).toContain('plan_changed');
  });

  it('refuses to ask again for a round that is not approved, or whose execution began', async () => {
    const pending = (await fx.store.approvals.get(approvalId))!;
    await expect(fx.store.approvals.askAgainForPlan(pending, CURRENT, T0 + 10)).rejects.toMatchObject({
      code: 'not_approved',
    });
    await approve();
    await fx.store.approvals.decide({ approvalId, decision: 'approved', decidedBy: 'U0N', now: T0 + 1 });
    await fx.store.ledger.begin({ approvalId, fence, argsHash: call.argsHash, now: T0 + 2 });
    const approved = (await fx.store.approvals.get(approvalId))!;
    const refused = await fx.store.approvals.askAgainForPlan(approved, CURRENT, T0 + 10).catch((e) => e);
    expect(refused).toBeInstanceOf(StoreError);
    expect(refused.code).toBe('not_approved');
  });
});
