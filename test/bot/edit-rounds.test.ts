/**
 * An edited call is asked of the edited call's people, and only theirs (issue 21, item 1): the edited
 * round takes its approvers, quorum, expiry, reminders and escalation from the rule that matches the
 * edited arguments, never the old round's, and gets timers of its own.
 */
import { afterEach, expect, it } from 'vitest';
import { escalateJobId, expireJobId, remindJobId } from '../../src/queue/index.js';
import { ACTION_IDS, CALLBACK_IDS } from '../../src/slack/ids.js';
import { nextRoundOf } from '../../src/store/index.js';
import { interactivityBody, makeTriggerId, viewSubmissionPayload } from '../fakes/slack-signing.js';
import { type BotFixture, CHANNEL, MANAGER, startBotFixture } from './bot-fixture.js';

const SCHEMA = {
  type: 'object',
  properties: { service: { type: 'string' }, env: { type: 'string', enum: ['staging', 'prod'] } },
  required: ['service', 'env'],
  additionalProperties: false,
};

const POLICY = `
approvals:
  approvers: [${MANAGER}]
custom: [{ path: ./deploy.ts, name: deploy }]
rules:
  deploy:
    - name: staging
      when: { env: staging }
      outcome: ask
      approvers: [${MANAGER}]
      expiresAfterMinutes: 120
      remindAtPercent: [25]
      escalateTo: [S0BROAD]
      escalateAfterMinutes: 10
    - name: prod
      when: { env: prod }
      outcome: ask
      approvers: [U0LEADA, U0LEADB]
      quorum: 2
      expiresAfterMinutes: 30
      remindAtPercent: [50]
`;

let fx: BotFixture;
afterEach(async () => {
  await fx.cleanup();
});

it('an edit from staging to prod is asked under the prod rule, with its own timers and no staging escalation', async () => {
  fx = await startBotFixture({ policyYaml: POLICY });
  const pending = await fx.pendingApproval({
    tool: 'deploy',
    args: { service: 'payments', env: 'staging' },
    expiresInMs: 120 * 60_000,
    approvers: { users: [MANAGER], groups: [] },
    policy: {
      schema: SCHEMA,
      rule: 'rule 1 of deploy (staging)',
      remindAtPercent: [25],
      escalation: { to: { users: [], groups: ['S0BROAD'] }, afterMs: 10 * 60_000 },
    },
  });
  const triggerId = makeTriggerId();
  await fx.click({
    user: MANAGER,
    channel: CHANNEL,
    messageTs: pending.cardTs,
    threadTs: pending.threadTs,
    action: { actionId: ACTION_IDS.edit, value: pending.approvalId },
    triggerId,
  });
  await fx.bot.idle();
  const view = fx.fake.callsOf('views.open').find((c) => c.args.trigger_id === triggerId)?.args.view as {
    private_metadata: string;
  };
  const before = Date.now();
  const res = await fx.post(
    interactivityBody(
      viewSubmissionPayload(fx.id, {
        user: MANAGER,
        callbackId: CALLBACK_IDS.edit,
        privateMetadata: view.private_metadata,
        values: {
          'arg:service': { value: { type: 'plain_text_input', value: 'payments' } },
          'arg:env': { value: { type: 'static_select', selected_option: { value: 'prod' } } },
        },
      }),
    ),
  );
  expect(res.status).toBe(200);
  await fx.bot.idle();

  const next = await fx.store.approvals.get(nextRoundOf(pending.approvalId));
  expect(next).toMatchObject({
    status: 'pending',
    args: { service: 'payments', env: 'prod' },
    rule: 'rule 2 of deploy (prod)',
    approvers: { users: ['U0LEADA', 'U0LEADB'], groups: [] },
    quorum: 2,
    remindAtPercent: [50],
  });
  expect(next?.escalation).toBeUndefined();
  expect(next?.escalatedAt).toBeUndefined();
  expect(next!.expiresAt).toBeGreaterThanOrEqual(before + 30 * 60_000);
  expect(next!.expiresAt).toBeLessThanOrEqual(Date.now() + 30 * 60_000);

  const ids = (await fx.queue.getJobs(['delayed', 'waiting'])).map((j) => j.id);
  expect(ids).toContain(expireJobId(next!.approvalId));
  expect(ids).toContain(remindJobId(next!.approvalId, 50));
  expect(ids).not.toContain(escalateJobId(next!.approvalId));
});

it("an edited round in a channel whose rule names approvers is asked of the channel's, with the rule's quorum", async () => {
  fx = await startBotFixture({
    policyYaml: `${POLICY}channels:\n  rules:\n    - match: { id: ${CHANNEL} }\n      approvers: [${MANAGER}, U0CHAN]\n`,
  });
  const pending = await fx.pendingApproval({
    tool: 'deploy',
    args: { service: 'payments', env: 'staging' },
    expiresInMs: 120 * 60_000,
    approvers: { users: [MANAGER, 'U0CHAN'], groups: [] },
    policy: { schema: SCHEMA, rule: 'rule 1 of deploy (staging)' },
  });
  const triggerId = makeTriggerId();
  await fx.click({
    user: MANAGER,
    channel: CHANNEL,
    messageTs: pending.cardTs,
    threadTs: pending.threadTs,
    action: { actionId: ACTION_IDS.edit, value: pending.approvalId },
    triggerId,
  });
  await fx.bot.idle();
  const view = fx.fake.callsOf('views.open').find((c) => c.args.trigger_id === triggerId)?.args.view as {
    private_metadata: string;
  };
  const res = await fx.post(
    interactivityBody(
      viewSubmissionPayload(fx.id, {
        user: MANAGER,
        callbackId: CALLBACK_IDS.edit,
        privateMetadata: view.private_metadata,
        values: {
          'arg:service': { value: { type: 'plain_text_input', value: 'payments' } },
          'arg:env': { value: { type: 'static_select', selected_option: { value: 'prod' } } },
        },
      }),
    ),
  );
  expect(res.status).toBe(200);
  await fx.bot.idle();
  expect(await fx.store.approvals.get(nextRoundOf(pending.approvalId))).toMatchObject({
    status: 'pending',
    rule: 'rule 2 of deploy (prod)',
    approvers: { users: [MANAGER, 'U0CHAN'], groups: [] },
    quorum: 2,
  });
});
