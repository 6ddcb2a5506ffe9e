/**
 * Invariant 10, second sentence, as a property on the real store: for any mix of `approvals.mode`, the
 * tool's own `mode`, `channels.shadow` and the rule that decides the call (none, allow, ask, deny), and
 * any clicks afterwards (Approve, Reject, Would approve, Would reject, Approve again, by anyone), a call in
 * shadow mode never gets a ledger entry and the ledger never lets it begin executing. The planning is the
 * worker's own (planPauseCall, as postPause stores a pause); the store's scripts are the real ones.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePolicy } from '../../src/config/policy.js';
import { shadowReason } from '../../src/config/shadow-mode.js';
import type { GatedCall } from '../../src/loop/gated-calls.js';
import { argsHash } from '../../src/loop/hash.js';
import { decideGate } from '../../src/policy/gate.js';
import { approvalIdFor, StoreError } from '../../src/store/index.js';
import { planPauseCall } from '../../src/worker/pause.js';
import type { WorkerRuntime } from '../../src/worker/runtime.js';
import { type StoreFixture, storeFixture } from '../store/redis-fixture.js';
import { realisticState, slack, T0 } from '../store/run-state-fixture.js';
import { silentLogger, testTools } from '../support/engine.js';

let fx: StoreFixture;
beforeAll(() => {
  fx = storeFixture();
});
afterAll(async () => {
  await fx.cleanup();
});

const mode = fc.constantFrom(undefined, 'enforce', 'shadow');
const click = fc.record({
  kind: fc.constantFrom('approve', 'reject', 'would_approve', 'would_reject', 'reapprove'),
  by: fc.constantFrom('U0MGR', 'U0ALICE', 'U0OTHER'),
});
const scenario = fc.record({
  globalMode: fc.constantFrom('enforce', 'shadow'),
  toolMode: mode,
  channelShadow: fc.boolean(),
  rule: fc.constantFrom('none', 'allow', 'ask', 'deny'),
  clicks: fc.array(click, { maxLength: 6 }),
});

function policyYaml(s: Scenario): string {
  const rules =
    s.rule === 'none'
      ? ''
      : `rules:\n  restart:\n    - { when: { service: search }, outcome: ${s.rule}${s.rule === 'ask' ? ', approvers: [U0MGR, U0ALICE]' : ''}${s.rule === 'deny' ? ', reason: no' : ''} }\n`;
  return [
    `approvals: { approvers: [U0MGR, U0ALICE], mode: ${s.globalMode}, trusted: [restart] }`,
    `custom:\n  - { path: ./r.ts, name: restart${s.toolMode ? `, mode: ${s.toolMode}` : ''} }`,
    `channels: { shadow: [${s.channelShadow ? slack.channelId : ''}] }`,
    rules,
  ].join('\n');
}
type Scenario = {
  globalMode: 'enforce' | 'shadow';
  toolMode: 'enforce' | 'shadow' | undefined;
  channelShadow: boolean;
  rule: 'none' | 'allow' | 'ask' | 'deny';
  clicks: { kind: string; by: string }[];
};

let runs = 0;

async function attempt(action: () => Promise<unknown>): Promise<void> {
  try {
    await action();
  } catch (error) {
    if (!(error instanceof StoreError)) throw error;
  }
}

describe('shadow mode never reaches the ledger', () => {
  it('for any policy/channel/tool mode mix and any clicks, a shadow call has no ledger entry and never begins', async () => {
    const tools = testTools().tools;
    let shadowed = 0;
    let ran = 0;
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const policy = parsePolicy(policyYaml(s), { env: {} });
        const runId = `run-shadow-${++runs}`;
        await fx.store.runs.createRun(realisticState(runId), slack);
        const lease = await fx.store.leases.acquire(runId, 'w', 30_000);
        if (!lease.acquired) throw new Error('no lease');
        const rt = {
          tools,
          store: fx.store,
          logger: silentLogger,
          policy: {
            limits: {} as WorkerRuntime['policy']['limits'],
            approversFor: () => ({ users: ['U0MGR', 'U0ALICE'], groups: [] }),
            gate: (tool: string, args: unknown) => decideGate(policy, tool, args),
            shadow: (tool: string, channelId: string) => shadowReason(policy, tool, channelId),
            approvalTtlMs: 3_600_000,
            systemPrompt: () => '',
          },
        } as unknown as WorkerRuntime;
        const args = { service: 'search' };
        const call: GatedCall = {
          toolCallId: 'call_1',
          tool: 'restart',
          effect: 'write',
          args,
          argsHash: argsHash(args),
          idempotent: false,
        };
        const ctx = { runId, ...slack };
        const planned = await planPauseCall(rt, ctx, { runId, requester: 'U0ALICE' }, call, T0);
        await fx.store.approvals.createApprovals({
          runId,
          fence: lease.fence,
          requester: 'U0ALICE',
          now: T0,
          approvals: [planned],
        });
        const approvalId = approvalIdFor(runId, 'call_1');
        let now = T0 + 1;
        for (const c of s.clicks) {
          now += 1_000;
          if (c.kind === 'approve' || c.kind === 'reject')
            await attempt(() =>
              fx.store.approvals.decide({
                approvalId,
                decision: c.kind === 'approve' ? 'approved' : 'rejected',
                decidedBy: c.by,
                now,
              }),
            );
          else if (c.kind === 'reapprove')
            await attempt(() => fx.store.approvals.reapprove({ approvalId, decidedBy: c.by, now }));
          else
            await attempt(() =>
              fx.store.approvals.shadowDecide({
                approvalId,
                decision: c.kind as 'would_approve' | 'would_reject',
                by: c.by,
                now,
              }),
            );
        }
        let began = false;
        await attempt(async () => {
          began = (
            await fx.store.ledger.begin({ approvalId, fence: lease.fence, argsHash: call.argsHash, now })
          ).changed;
        });
        const inShadow = shadowReason(policy, 'restart', slack.channelId) !== null;
        const deniedByRule = s.rule === 'deny';
        if (inShadow && !deniedByRule) {
          shadowed++;
          expect(await fx.store.approvals.get(approvalId)).toMatchObject({
            via: 'shadow',
            status: 'rejected',
          });
          expect(await fx.store.ledger.get(approvalId)).toBeNull();
          expect(began).toBe(false);
        }
        if (inShadow) expect(began).toBe(false);
        // The same check sees a ledger entry where one is due: an enforced allow rule runs the call.
        if (!inShadow && s.rule === 'allow') {
          ran++;
          expect(began).toBe(true);
        }
      }),
      { numRuns: 120 },
    );
    expect(shadowed).toBeGreaterThan(0);
    expect(ran).toBeGreaterThan(0);
  });
});
