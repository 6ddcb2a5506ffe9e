/**
 * Break glass through the real bot with a clock the test moves: a lockdown freeze that starts while a card
 * waits denies Approve and names who may break glass; Break glass asks for a reason and an incident
 * reference, is judged at the submission by the rule in force then, is refused to the requester even
 * where self-approval is allowed, decides once (a second submission changes nothing), is posted in the
 * thread and the audit channel, and its audit entry is flagged for review. A property over random clock
 * moves and clicks: the call is approved exactly when the deciding clicker was allowed, at that moment,
 * by the rule in force (Approve by an ask rule's approvers, Break glass by a deny rule's break-glass ones).
 */
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decideGate } from '../../src/policy/gate.js';
import { ACTION_IDS, CALLBACK_IDS } from '../../src/slack/ids.js';
import { interactivityBody, makeTriggerId, viewSubmissionPayload } from '../fakes/slack-signing.js';
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
const LEAD = 'U0LEADA';
const AUDIT = 'C0AUDIT';

/** 09:20-09:30 UTC the lockdown: deploys denied, break glass by the lead, the SRE group or (never) Alice. */
const POLICY = `
approvals:
  approvers: [${MANAGER}, ${REQUESTER}, ${GROUP}]
  selfApproval: true
  expiresAfterMinutes: 120
custom: [{ path: ./deploy.ts, name: deploy }]
freezes:
  lockdown: { windows: [{ start: "2026-03-02 09:20", end: "2026-03-02 09:30" }] }
rules:
  deploy:
    - name: lockdown
      when: { freeze: lockdown }
      outcome: deny
      reason: nothing ships during the lockdown
      breakGlass: { approvers: [${LEAD}, ${GROUP}, ${REQUESTER}], auditChannel: ${AUDIT} }
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
afterEach(() => {
  now = T0;
});

/** A deploy card asked at T0 (no freeze yet), offering Break glass as the worker draws it. */
async function waiting(): Promise<PendingApproval> {
  now = T0;
  return fx.pendingApproval({
    tool: 'deploy',
    args: ARGS,
    expiresInMs: 120 * MIN,
    policy: { selfApproval: true, breakGlass: 'offered' },
  });
}

async function click(pending: PendingApproval, user: string, actionId: string, triggerId = makeTriggerId()) {
  const res = await fx.click({
    user,
    channel: CHANNEL,
    messageTs: pending.cardTs,
    threadTs: pending.threadTs,
    action: { actionId, value: pending.approvalId },
    triggerId,
  });
  expect(res.status).toBe(200);
  await fx.bot.idle();
}

/** Submits the break-glass form for `pending` as `user`; returns the bot's answer (empty: closed). */
async function submit(pending: PendingApproval, user: string, reason = 'payments down', incident = 'INC-42') {
  const res = await fx.post(
    interactivityBody(
      viewSubmissionPayload(fx.id, {
        user,
        callbackId: CALLBACK_IDS.breakGlass,
        privateMetadata: JSON.stringify({
          approvalId: pending.approvalId,
          channel: CHANNEL,
          messageTs: pending.cardTs,
        }),
        values: {
          reason: { value: { type: 'plain_text_input', value: reason } },
          incident: { value: { type: 'plain_text_input', value: incident } },
        },
      }),
    ),
  );
  expect(res.status).toBe(200);
  await fx.bot.idle();
  const text = await res.text();
  return text ? (JSON.parse(text) as Record<string, unknown>) : null;
}

const record = (p: PendingApproval) => fx.store.approvals.get(p.approvalId);
const lastNoteTo = (user: string) =>
  fx.fake
    .ephemerals(CHANNEL)
    .filter((e) => e.user === user)
    .at(-1)?.text;
const resumes = async (p: PendingApproval) =>
  (await fx.jobs()).filter((j) => j.name === 'resume' && j.data.approvalId === p.approvalId).length;

describe('break glass at the bot', () => {
  it('a freeze begun while the card waits refuses Approve and names who may break glass', async () => {
    const pending = await waiting();
    now = T0 + 25 * MIN;
    await click(pending, MANAGER, ACTION_IDS.approve);
    expect((await record(pending))?.status).toBe('pending');
    expect(lastNoteTo(MANAGER)).toContain('nothing ships during the lockdown');
    expect(lastNoteTo(MANAGER)).toContain(`<@${LEAD}>`);
    expect(lastNoteTo(MANAGER)).toContain('may *Break glass* on the card');
  });

  it('is refused to the requester, even with self-approval allowed and listed as a break-glass approver, and to a stranger', async () => {
    const pending = await waiting();
    now = T0 + 25 * MIN;
    const opened = fx.fake.callsOf('views.open').length;
    await click(pending, REQUESTER, ACTION_IDS.breakGlass);
    expect(lastNoteTo(REQUESTER)).toContain('nobody can break glass for their own call');
    await click(pending, STRANGER, ACTION_IDS.breakGlass);
    expect(lastNoteTo(STRANGER)).toContain('You may not break glass on rule 1 of deploy (lockdown)');
    expect(fx.fake.callsOf('views.open')).toHaveLength(opened);
    // A submission crafted without the click is judged the same way.
    const answer = await submit(pending, REQUESTER);
    expect(JSON.stringify(answer)).toContain('nobody can break glass for their own call');
    expect((await record(pending))?.status).toBe('pending');
    expect(await resumes(pending)).toBe(0);
  });

  it('asks for a reason and an incident, decides once, announces it, and flags the audit entry', async () => {
    const pending = await waiting();
    now = T0 + 25 * MIN;
    const triggerId = makeTriggerId();
    await click(pending, LEAD, ACTION_IDS.breakGlass, triggerId);
    const view = fx.fake.callsOf('views.open').find((c) => c.args.trigger_id === triggerId)?.args.view as {
      callback_id: string;
    };
    expect(view.callback_id).toBe(CALLBACK_IDS.breakGlass);

    const blank = await submit(pending, LEAD, 'payments down', '   ');
    expect(blank).toMatchObject({ response_action: 'errors', errors: { incident: expect.any(String) } });
    const noReason = await submit(pending, LEAD, '', 'INC-42');
    expect(noReason).toMatchObject({ response_action: 'errors', errors: { reason: expect.any(String) } });
    const long = await submit(pending, LEAD, 'x'.repeat(1_001), 'INC-42');
    expect(long).toMatchObject({ errors: { reason: expect.stringContaining('At most 1000') } });
    expect((await record(pending))?.status).toBe('pending');

    expect(await submit(pending, LEAD)).toBeNull();
    const decided = await record(pending);
    expect(decided).toMatchObject({ status: 'approved', decidedBy: LEAD });
    expect(decided?.decisionReason).toBe('break glass (incident INC-42): payments down');
    expect(await resumes(pending)).toBe(1);

    // Single use: a second submission (another break-glass approver) changes nothing.
    const again = await submit(pending, GROUPIE, 'me too', 'INC-43');
    expect(JSON.stringify(again)).toContain('already approved');
    expect(await resumes(pending)).toBe(1);

    const said = (channel: string) =>
      fx.fake.messages(channel).some((m) => m.text.includes('Break glass') && m.text.includes('INC-42'));
    const inThread = () =>
      fx.fake
        .thread(CHANNEL, pending.threadTs)
        .some((m) => m.text.includes('Break glass') && m.text.includes('INC-42'));
    await expect.poll(inThread, { timeout: 5_000 }).toBe(true);
    await expect.poll(() => said(AUDIT), { timeout: 5_000 }).toBe(true);

    const flagged = (await fx.store.audit.recent(50)).filter(
      (e) => e.entry.approvalId === pending.approvalId && e.entry.breakGlass === 'true',
    );
    expect(flagged).toHaveLength(1);
    expect(flagged[0]?.entry).toMatchObject({
      decision: 'approved',
      decider: LEAD,
      incident: 'INC-42',
      reviewed: 'false',
      rule: '',
    });
  });

  it("App Home shows a denied call's break-glass people its card's buttons: Break glass and Reject", async () => {
    now = T0 + 25 * MIN;
    const pending = await fx.pendingApproval({
      tool: 'deploy',
      args: ARGS,
      expiresInMs: 120 * MIN,
      policy: { selfApproval: false, breakGlass: 'only' },
      approvers: { users: [LEAD], groups: [] },
    });
    await fx.sendEvent({ type: 'app_home_opened', user: LEAD, tab: 'home', channel: 'D0HOME' });
    await fx.bot.idle();
    const home = fx.fake.home(LEAD) as {
      blocks: { block_id?: string; elements?: { action_id?: string }[] }[];
    };
    const row = home.blocks.find((b) => b.block_id === `home_${pending.approvalId}`);
    expect(row?.elements?.map((e) => e.action_id)).toEqual([ACTION_IDS.breakGlass, ACTION_IDS.reject]);
  });

  it('one break-glass approver decides a card that asked a quorum of two', async () => {
    now = T0;
    const pending = await fx.pendingApproval({
      tool: 'deploy',
      args: ARGS,
      expiresInMs: 120 * MIN,
      policy: { quorum: 2, breakGlass: 'offered' },
      approvers: { users: [MANAGER, LEAD], groups: [] },
    });
    now = T0 + 25 * MIN;
    expect(await submit(pending, LEAD)).toBeNull();
    expect(await record(pending)).toMatchObject({ status: 'approved', decidedBy: LEAD });
    expect(await resumes(pending)).toBe(1);
  });

  it('once the freeze is over there is no glass to break; Approve works again', async () => {
    const pending = await waiting();
    now = T0 + 35 * MIN;
    await click(pending, LEAD, ACTION_IDS.breakGlass);
    expect(lastNoteTo(LEAD)).toContain('No rule denies this `deploy` call now');
    expect(await submit(pending, GROUPIE)).toMatchObject({ response_action: 'update' });
    expect((await record(pending))?.status).toBe('pending');
    await click(pending, MANAGER, ACTION_IDS.approve);
    expect((await record(pending))?.status).toBe('approved');
  });
});

type Action = 'approve' | 'break_glass';

/** Whether the rule in force at `at` lets `user` take `action` on the deploy card asked at T0. */
function allowedAt(at: number, user: string, action: Action): boolean {
  const d = decideGate(fx.policy, 'deploy', ARGS, at);
  const inIds = (ids: { users: string[]; groups: string[] }) =>
    ids.users.includes(user) || (user === GROUPIE && ids.groups.includes(GROUP));
  if (action === 'approve') return d.kind === 'ask' && inIds(d.approvers); // selfApproval: true
  return (
    d.kind === 'deny' && d.breakGlass !== undefined && user !== REQUESTER && inIds(d.breakGlass.approvers)
  );
}

const USERS = [MANAGER, GROUPIE, LEAD, REQUESTER, STRANGER];

describe('property', () => {
  it('the call is approved exactly when the deciding clicker was allowed by the rule in force at that moment', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            advance: fc.integer({ min: 0, max: 10 }),
            user: fc.constantFrom(...USERS),
            action: fc.constantFrom<Action>('approve', 'break_glass'),
          }),
          { minLength: 1, maxLength: 5 },
        ),
        async (steps) => {
          const pending = await waiting();
          now = T0 + 12 * MIN; // the lockdown is 8 to 18 minutes away: most sequences cross it
          for (const { advance, user, action } of steps) {
            now += advance * MIN;
            const allowed = allowedAt(now, user, action);
            if (action === 'approve') await click(pending, user, ACTION_IDS.approve);
            else await submit(pending, user);
            const after = await record(pending);
            expect(after?.status).toBe(allowed ? 'approved' : 'pending');
            if (allowed) {
              expect(after?.decidedBy).toBe(user);
              expect(await resumes(pending)).toBe(1);
              return;
            }
          }
          expect(await resumes(pending)).toBe(0);
        },
      ),
      { numRuns: 30 },
    );
  }, 180_000);
});

describe('break glass and channel permissions', () => {
  let quiet: BotFixture;
  beforeAll(async () => {
    const channels = `channels:\n  rules:\n    - name: quiet\n      match: { id: ${CHANNEL} }\n      tools: [http_get]\n`;
    quiet = await startBotFixture({ policyYaml: `${POLICY}${channels}`, clock: { now: () => now } });
  });
  afterAll(async () => {
    await quiet?.cleanup();
  });

  it('overrides the deny rule only: a channel whose permissions refuse the tool refuses break glass too', async () => {
    now = T0;
    const pending = await quiet.pendingApproval({
      tool: 'deploy',
      args: ARGS,
      expiresInMs: 120 * MIN,
      policy: { breakGlass: 'offered' },
    });
    now = T0 + 25 * MIN;
    const res = await quiet.post(
      interactivityBody(
        viewSubmissionPayload(quiet.id, {
          user: LEAD,
          callbackId: CALLBACK_IDS.breakGlass,
          privateMetadata: JSON.stringify({
            approvalId: pending.approvalId,
            channel: CHANNEL,
            messageTs: pending.cardTs,
          }),
          values: {
            reason: { value: { type: 'plain_text_input', value: 'payments down' } },
            incident: { value: { type: 'plain_text_input', value: 'INC-9' } },
          },
        }),
      ),
    );
    expect(await res.text()).toContain("This channel's permissions do not allow this `deploy` call now");
    expect((await quiet.store.approvals.get(pending.approvalId))?.status).toBe('pending');
  });
});
