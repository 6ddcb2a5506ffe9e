import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { GatedCall } from '../../src/loop/gated-calls.js';
import { approvalIdFor, storeExecutionLedger } from '../../src/store/index.js';
import { type StoreFixture, storeFixture } from './redis-fixture.js';
import { realisticState, slack, T0 } from './run-state-fixture.js';

const RUN = 'run-ledger';
const call: GatedCall = {
  toolCallId: 'call_3',
  tool: 'run_action',
  effect: 'write',
  args: { action: 'restart_service', service: 'payments', env: 'staging' },
  argsHash: 'a'.repeat(64),
  idempotent: false,
};
const approvalId = approvalIdFor(RUN, 'call_3');
const clock = { now: () => T0 + 10 };

let fx: StoreFixture;
let fence: number;

async function takeLease(holder: string): Promise<number> {
  const lease = await fx.store.leases.acquire(RUN, holder, 30_000);
  if (!lease.acquired) throw new Error('not acquired');
  return lease.fence;
}

beforeEach(async () => {
  fx = storeFixture();
  await fx.store.runs.createRun(realisticState(RUN), slack);
  fence = await takeLease('worker-a');
  await fx.store.approvals.createApprovals({
    runId: RUN,
    fence,
    requester: 'U0ALICE',
    now: T0,
    approvals: [{ call, approvers: { users: ['U0M'], groups: [] }, expiresAt: T0 + 3_600_000 }],
  });
});
afterEach(async () => {
  await fx.cleanup();
});

const approve = () =>
  fx.store.approvals.decide({ approvalId, decision: 'approved', decidedBy: 'U0M', now: T0 + 1 });
const begin = (f = fence, argsHash = call.argsHash) =>
  fx.store.ledger.begin({ approvalId, fence: f, argsHash, now: T0 + 2 });

describe('execution ledger', () => {
  it('begins once: a second beginExecution is refused with the current entry', async () => {
    await approve();
    const first = await begin();
    expect(first.changed).toBe(true);
    expect(first.entry).toMatchObject({ status: 'executing', attempts: 1, fence, startedAt: T0 + 2 });
    const second = await begin();
    expect(second.changed).toBe(false);
    expect(second.entry.status).toBe('executing');
  });

  it('lets exactly one of many concurrent begins proceed', async () => {
    await approve();
    const results = await Promise.all(Array.from({ length: 10 }, () => begin()));
    expect(results.filter((r) => r.changed)).toHaveLength(1);
  });

  it('records the result; a finished call never begins again', async () => {
    await approve();
    await begin();
    const result = { ok: true as const, data: { restarted: true } };
    const done = await fx.store.ledger.finish({
      approvalId,
      fence,
      outcome: 'succeeded',
      result,
      now: T0 + 3,
    });
    expect(done.changed).toBe(true);
    expect(done.entry).toMatchObject({ status: 'succeeded', result, finishedAt: T0 + 3 });
    expect((await begin()).changed).toBe(false);
    expect(
      (await fx.store.ledger.finish({ approvalId, fence, outcome: 'failed', result, now: T0 + 4 })).changed,
    ).toBe(false);
  });

  it('refuses a call that was not approved, other arguments, and a stale fence', async () => {
    await expect(begin()).rejects.toMatchObject({ code: 'not_approved' });
    await approve();
    await expect(begin(fence, 'b'.repeat(64))).rejects.toMatchObject({ code: 'args_mismatch' });
    await fx.store.leases.release(RUN, fence);
    const newer = await takeLease('worker-b');
    await expect(begin(fence)).rejects.toMatchObject({ code: 'stale_fence' });
    expect((await begin(newer)).changed).toBe(true);
  });

  it('marks an entry left executing by a crash as outcome_unknown', async () => {
    await approve();
    await begin();
    await fx.store.leases.release(RUN, fence); // the crashed worker's lease is gone
    const newer = await takeLease('worker-b');
    const marked = await fx.store.ledger.markOutcomeUnknown(approvalId, newer, T0 + 9);
    expect(marked).toMatchObject({ changed: true, entry: { status: 'outcome_unknown', finishedAt: T0 + 9 } });
    expect((await begin(newer)).changed).toBe(false);
  });
});

describe('ExecutionLedger port', () => {
  it('proceeds once, then replays the recorded result', async () => {
    await approve();
    const port = storeExecutionLedger(fx.store.ledger, { runId: RUN, fence, clock });
    expect(await port.begin(call)).toEqual({ proceed: true });
    const result = { ok: true as const, data: 'done' };
    await port.finish(call, result);
    expect(await port.begin(call)).toEqual({ proceed: false, result });
  });

  it('after a crash mid-execution reports outcome_unknown and does not run it again', async () => {
    await approve();
    const crashed = storeExecutionLedger(fx.store.ledger, { runId: RUN, fence, clock });
    expect(await crashed.begin(call)).toEqual({ proceed: true });
    await fx.store.leases.release(RUN, fence);
    const recovered = storeExecutionLedger(fx.store.ledger, {
      runId: RUN,
      fence: await takeLease('worker-b'),
      clock,
    });
    const outcome = await recovered.begin(call);
    expect(outcome).toMatchObject({
      proceed: false,
      result: { ok: false, error: { code: 'outcome_unknown' } },
    });
    expect((await fx.store.ledger.get(approvalId))?.status).toBe('outcome_unknown');
    expect(await recovered.begin(call)).toMatchObject({ proceed: false });
  });

  it('runs an idempotent tool again after a crash', async () => {
    await approve();
    const idem = { ...call, idempotent: true };
    await storeExecutionLedger(fx.store.ledger, { runId: RUN, fence, clock }).begin(idem);
    await fx.store.leases.release(RUN, fence);
    const recovered = storeExecutionLedger(fx.store.ledger, {
      runId: RUN,
      fence: await takeLease('worker-b'),
      clock,
    });
    expect(await recovered.begin(idem)).toEqual({ proceed: true });
    expect((await fx.store.ledger.get(approvalId))?.attempts).toBe(2);
  });

  it('answers approval_mismatch for unapproved calls or other arguments, and throws on a lost lease', async () => {
    const port = storeExecutionLedger(fx.store.ledger, { runId: RUN, fence, clock });
    expect(await port.begin(call)).toMatchObject({
      proceed: false,
      result: { error: { code: 'approval_mismatch' } },
    });
    await approve();
    expect(await port.begin({ ...call, argsHash: 'c'.repeat(64) })).toMatchObject({
      proceed: false,
      result: { error: { code: 'approval_mismatch' } },
    });
    await fx.store.leases.release(RUN, fence);
    await expect(port.begin(call)).rejects.toMatchObject({ code: 'lease_lost' });
  });
});
