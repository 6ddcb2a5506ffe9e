import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatedCall } from '../../src/loop/gated-calls.js';
import type { ExecutionLedger } from '../../src/loop/ports.js';
import { approvalIdFor, createStore, storeExecutionLedger } from '../../src/store/index.js';
import { type StoreFixture, storeFixture } from './redis-fixture.js';
import { realisticState, slack, T0 } from './run-state-fixture.js';

/**
 * Invariant 3 with REDIS_WAIT_REPLICAS: whatever mix of attempts whose `executing` record a replica
 * confirms or not, and of workers dying right after the side effect started, an approved call runs at
 * most once, and runs as soon as one attempt is confirmed. The test Redis has no replica, so a store with
 * `waitReplicas: 1` is never confirmed and one with 0 always is; both share the same keys.
 */
const RUN = 'run-durable';
const clock = { now: () => T0 + 10 };
let fx: StoreFixture;
let calls = 0;

beforeAll(async () => {
  fx = storeFixture();
  await fx.store.runs.createRun(realisticState(RUN), slack);
});
afterAll(async () => {
  await fx.cleanup();
});

interface Attempt {
  confirmed: boolean;
  /** The worker dies once the side effect started, before recording its result. */
  dies: boolean;
}

async function leaseFence(holder: string): Promise<number> {
  const lease = await fx.store.leases.acquire(RUN, holder, 30_000);
  if (!lease.acquired) throw new Error('lease not acquired');
  return lease.fence;
}

describe('the execution ledger with WAIT: never twice', () => {
  it('runs an approved call at most once, and exactly once when any attempt was confirmed', async () => {
    const unconfirmed = createStore(fx.redis, {
      prefix: `{${fx.prefix}}`,
      waitReplicas: 1,
      waitTimeoutMs: 1,
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ confirmed: fc.boolean(), dies: fc.boolean() }), { minLength: 1, maxLength: 6 }),
        async (attempts: Attempt[]) => {
          calls++;
          const call: GatedCall = {
            toolCallId: `call_${calls}`,
            tool: 'run_action',
            effect: 'write',
            args: { n: calls },
            argsHash: 'b'.repeat(64),
            idempotent: false,
          };
          const approvalId = approvalIdFor(RUN, call.toolCallId);
          const setupFence = await leaseFence('setup');
          await fx.store.approvals.createApprovals({
            runId: RUN,
            fence: setupFence,
            requester: 'U0ALICE',
            now: T0,
            approvals: [{ call, approvers: { users: ['U0M'], groups: [] }, expiresAt: T0 + 3_600_000 }],
          });
          await fx.store.leases.release(RUN, setupFence);
          await fx.store.approvals.decide({
            approvalId,
            decision: 'approved',
            decidedBy: 'U0M',
            now: T0 + 1,
          });

          let executions = 0;
          const codes: string[] = [];
          for (const [i, attempt] of attempts.entries()) {
            // Each attempt is another job delivery on another worker, under a lease of its own.
            const fence = await leaseFence(`worker-${i}`);
            const store = attempt.confirmed ? fx.store : unconfirmed;
            const ledger: ExecutionLedger = storeExecutionLedger(store.ledger, { runId: RUN, fence, clock });
            const gate = await ledger.begin(call);
            if (gate.proceed) {
              executions++;
              if (!attempt.dies) await ledger.finish(call, { ok: true, data: 'done' });
            } else {
              codes.push(gate.result.ok ? 'stored_result' : gate.result.error.code);
            }
            await fx.store.leases.release(RUN, fence);
          }
          expect(executions).toBe(attempts.some((a) => a.confirmed) ? 1 : 0);
          // Before the first confirmed attempt, every attempt says it did not run and why.
          const firstConfirmed = attempts.findIndex((a) => a.confirmed);
          const before = firstConfirmed === -1 ? attempts.length : firstConfirmed;
          expect(codes.slice(0, before)).toEqual(Array(before).fill('durability_unconfirmed'));
          const entry = await fx.store.ledger.get(approvalId);
          expect(entry?.status).toBe(
            firstConfirmed === -1
              ? 'not_started'
              : attempts[firstConfirmed]!.dies
                ? attempts.length > firstConfirmed + 1
                  ? 'outcome_unknown'
                  : 'executing'
                : 'succeeded',
          );
        },
      ),
      { numRuns: 40 },
    );
  }, 120_000);
});
