/**
 * Clicks judged by the rule in force at the click (invariant 9), through the real bot with a clock the
 * test moves: a change freeze that starts while a card waits denies approval (Reject still works) or asks
 * its own people and quorum; after it ends the card's own rule applies again. A property over random
 * sequences of clock moves and clicks: the call is approved exactly when the deciding click's clicker was
 * allowed by the rule in force at that moment, with that rule's quorum.
 */
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decideGate } from '../../src/policy/gate.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { nextRoundOf } from '../../src/store/index.js';
import {
  type BotFixture,
  CHANNEL,
  GROUP,
  GROUPIE,
  MANAGER,
  type PendingApproval,
  REQUESTER,
  STRANGER,
  startBotFixture,
} from './bot-fixture.js';

const T0 = Date.parse('2026-03-02T09:00:00Z');
const MIN = 60_000;
const LEAD_A = 'U0LEADA';
const LEAD_B = 'U0LEADB';

/** 09:10-09:50 UTC the careful freeze (two of three leads), 09:20-09:30 the lockdown (deny). */
const POLICY = `
approvals:
  approvers: [${MANAGER}, ${REQUESTER}, ${GROUP}]
  selfApproval: false
  expiresAfterMinutes: 120
custom: [{ path: ./deploy.ts, name: deploy }]
freezes:
  careful: { windows: [{ start: "2026-03-02 09:10", end: "2026-03-02 09:50" }] }
  lockdown: { windows: [{ start: "2026-03-02 09:20", end: "2026-03-02 09:30" }] }
rules:
  deploy:
    - name: lockdown
      when: { freeze: lockdown }
      outcome: deny
      reason: nothing ships during the lockdown
    - name: careful
      when: { freeze: careful }
      outcome: ask
      approvers: [${MANAGER}, ${LEAD_A}, ${LEAD_B}]
      quorum: 2
`;

const ARGS = { service: 'payments', env: 'prod' };
let now = T0;
let fx: BotFixture;
beforeAll(async () => {
  fx = await startBotFixture({ policyYaml: POLICY, clock: { now: () => now } });
});
afterAll(async () => {
  await fx.cleanup();
});

async function waiting(): Promise<PendingApproval> {
  now = T0;
  return fx.pendingApproval({ tool: 'deploy', args: ARGS, expiresInMs: 120 * MIN });
}

async function click(pending: PendingApproval, user: string, actionId: string = ACTION_IDS.approve) {
  const res = await fx.click({
    user,
    channel: CHANNEL,
    messageTs: pending.cardTs,
    threadTs: pending.threadTs,
    action: { actionId, value: pending.approvalId },
  });
  expect(res.status).toBe(200);
  await fx.bot.idle();
}

const status = async (p: PendingApproval) => (await fx.store.approvals.get(p.approvalId))?.status;
const lastNoteTo = (user: string) =>
  fx.fake
    .ephemerals(CHANNEL)
    .filter((e) => e.user === user)
    .at(-1)?.text;
const resumes = async (p: PendingApproval) =>
  (await fx.jobs()).filter((j) => j.name === 'resume' && j.data.approvalId === p.approvalId).length;

describe('a freeze that starts while the card waits', () => {
  afterEach(() => {
    now = T0;
  });

  it('denies approval at the click, with the freeze and the reason; Reject still works', async () => {
    const pending = await waiting();
    now = T0 + 25 * MIN;
    await click(pending, MANAGER);
    expect(await status(pending)).toBe('pending');
    expect(lastNoteTo(MANAGER)).toContain('A change freeze is in force (careful, lockdown)');
    expect(lastNoteTo(MANAGER)).toContain('nothing ships during the lockdown');
    expect(await resumes(pending)).toBe(0);
    await click(pending, MANAGER, ACTION_IDS.reject);
    const opened = fx.fake.callsOf('views.open').at(-1);
    expect(JSON.stringify(opened?.args.view)).toContain('reject');
  });

  it('raises the quorum to the freeze rule: one approval is counted, a second lead decides; others are refused', async () => {
    const pending = await waiting();
    now = T0 + 12 * MIN;
    await click(pending, GROUPIE);
    expect(await status(pending)).toBe('pending');
    expect(lastNoteTo(GROUPIE)).toContain('rule 2 of deploy (careful) now decides this call (2 approvers)');
    await click(pending, LEAD_A);
    expect(await status(pending)).toBe('pending');
    expect(lastNoteTo(LEAD_A)).toContain('1 of 2');
    expect(await resumes(pending)).toBe(0);
    await click(pending, MANAGER);
    expect(await status(pending)).toBe('approved');
    expect((await fx.store.approvals.get(pending.approvalId))?.decidedBy).toBe(MANAGER);
    expect(await resumes(pending)).toBe(1);
  });

  it('once the freeze is over, the card is decided as it was asked', async () => {
    const pending = await waiting();
    now = T0 + 55 * MIN;
    await click(pending, LEAD_A);
    expect(await status(pending)).toBe('pending');
    expect(lastNoteTo(LEAD_A)).toContain('You may not approve');
    await click(pending, GROUPIE);
    expect(await status(pending)).toBe('approved');
  });
});

/** `pending` approved at T0 by GROUPIE, begun by a worker that died: its outcome is unknown. */
async function leftUnknown(pending: PendingApproval): Promise<void> {
  await fx.store.approvals.decide({
    approvalId: pending.approvalId,
    decision: 'approved',
    decidedBy: GROUPIE,
    now,
  });
  const lease = await fx.store.leases.acquire(pending.runId, 'dead-worker', 30_000);
  if (!lease.acquired) throw new Error('lease not acquired');
  const { approvalId } = pending;
  await fx.store.ledger.begin({ approvalId, fence: lease.fence, argsHash: pending.record.argsHash, now });
  await fx.store.ledger.markOutcomeUnknown(approvalId, lease.fence, now);
  await fx.store.leases.release(pending.runId, lease.fence);
}

describe('Approve again under a freeze', () => {
  it('is refused while a freeze asks more approvers than the first run had, and works once it is over', async () => {
    const pending = await waiting();
    await leftUnknown(pending);
    now = T0 + 12 * MIN;
    await click(pending, MANAGER, ACTION_IDS.reapprove);
    expect(lastNoteTo(MANAGER)).toContain(
      'asks 2 approvers for `deploy`, more than this call was approved with',
    );
    expect(await fx.store.approvals.get(nextRoundOf(pending.approvalId))).toBeNull();
    now = T0 + 55 * MIN;
    await click(pending, MANAGER, ACTION_IDS.reapprove);
    expect(await fx.store.approvals.get(nextRoundOf(pending.approvalId))).toMatchObject({
      status: 'approved',
      decidedBy: MANAGER,
    });
  });
});

/** Who the rule in force at `at` lets approve, and how many of them it needs; null when it denies. */
function inForce(at: number): { may: (user: string) => boolean; quorum: number } | null {
  const d = decideGate(fx.policy, 'deploy', ARGS, at);
  if (d.kind === 'deny') return null;
  if (d.kind === 'allow') throw new Error('no allow rule in this policy');
  const { users, groups } = d.approvers;
  return {
    may: (u) => u !== REQUESTER && (users.includes(u) || (u === GROUPIE && groups.includes(GROUP))),
    quorum: d.quorum,
  };
}

const USERS = [MANAGER, GROUPIE, LEAD_A, LEAD_B, REQUESTER, STRANGER];

describe('property', () => {
  it('the call is approved exactly when the deciding clicker is allowed by the rule in force, with its quorum', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ advance: fc.integer({ min: 0, max: 20 }), user: fc.constantFrom(...USERS) }), {
          minLength: 1,
          maxLength: 6,
        }),
        async (steps) => {
          const pending = await waiting();
          const votes = new Set<string>();
          for (const { advance, user } of steps) {
            now += advance * MIN;
            const rule = inForce(now);
            await click(pending, user);
            const record = await fx.store.approvals.get(pending.approvalId);
            if (rule?.may(user)) votes.add(user);
            const decides = rule?.may(user) === true && (rule.quorum <= 1 || votes.size >= rule.quorum);
            expect(record?.status).toBe(decides ? 'approved' : 'pending');
            if (decides) {
              expect(record?.decidedBy).toBe(user);
              expect(await resumes(pending)).toBe(1);
              return;
            }
          }
          expect(await resumes(pending)).toBe(0);
        },
      ),
      { numRuns: 20 },
    );
  }, 180_000);
});
