/**
 * Edit before approval through the real bot: the form is built from the tool's schema with the current
 * values; a bad value is an error in the form; a value a deny rule refuses too; a good edit makes the
 * approval's next round (its own hash), the card shows the diff and who edited, and, the editor being an
 * approver with quorum 1, the edited call is approved and its run resumed.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { argsHash } from '../../src/loop/hash.js';
import { ACTION_IDS, CALLBACK_IDS } from '../../src/slack/ids.js';
import { nextRoundOf } from '../../src/store/index.js';
import { interactivityBody, makeTriggerId, viewSubmissionPayload } from '../fakes/slack-signing.js';
import { type BotFixture, CHANNEL, MANAGER, type PendingApproval, startBotFixture } from './bot-fixture.js';

const SCHEMA = {
  type: 'object',
  properties: {
    service: { type: 'string', enum: ['payments', 'search'] },
    env: { type: 'string', enum: ['staging', 'prod'] },
    replicas: { type: 'integer', minimum: 1, maximum: 10 },
    dryRun: { type: 'boolean' },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
  },
  required: ['service', 'env'],
  additionalProperties: false,
};

const POLICY = `
approvals:
  approvers: [${MANAGER}]
custom: [{ path: ./scale.ts, name: scale }]
rules:
  scale:
    - when: { replicas: { gt: 8 } }
      outcome: deny
      reason: more than 8 replicas needs a capacity review
`;

let fx: BotFixture;
let pending: PendingApproval;
beforeEach(async () => {
  fx = await startBotFixture({ policyYaml: POLICY });
  pending = await fx.pendingApproval({
    tool: 'scale',
    args: { service: 'payments', env: 'prod', replicas: 3, dryRun: false },
    policy: { schema: SCHEMA },
  });
});
afterEach(async () => {
  await fx.cleanup();
});

async function openForm(user = MANAGER) {
  const triggerId = makeTriggerId();
  const res = await fx.click({
    user,
    channel: CHANNEL,
    messageTs: pending.cardTs,
    threadTs: pending.threadTs,
    action: { actionId: ACTION_IDS.edit, value: pending.approvalId },
    triggerId,
  });
  expect(res.status).toBe(200);
  await fx.bot.idle();
  const opened = fx.fake.callsOf('views.open').find((c) => c.args.trigger_id === triggerId);
  return opened?.args.view as {
    callback_id: string;
    private_metadata: string;
    blocks: Array<Record<string, unknown>>;
  };
}

function submit(privateMetadata: string, values: ReturnType<typeof form>, user = MANAGER) {
  const payload = viewSubmissionPayload(fx.id, {
    user,
    callbackId: CALLBACK_IDS.edit,
    privateMetadata,
    values,
  });
  return fx.post(interactivityBody(payload));
}

const form = (
  over: Partial<Record<'service' | 'env' | 'replicas' | 'labels', string>> & { dryRun?: boolean },
) => ({
  'arg:service': { value: { type: 'static_select', selected_option: { value: over.service ?? 'payments' } } },
  'arg:env': { value: { type: 'static_select', selected_option: { value: over.env ?? 'prod' } } },
  'arg:replicas': { value: { type: 'number_input', value: over.replicas ?? '3' } },
  'arg:dryRun': { value: { type: 'checkboxes', selected_options: over.dryRun ? [{ value: 'true' }] : [] } },
  'arg:labels': { value: { type: 'plain_text_input', value: over.labels ?? '' } },
});

describe('Edit', () => {
  it('opens a form from the schema with the current values', async () => {
    const view = await openForm();
    expect(view.callback_id).toBe(CALLBACK_IDS.edit);
    const elements = Object.fromEntries(
      view.blocks
        .filter((b) => b.type === 'input')
        .map((b) => [b.block_id, b.element as Record<string, unknown>]),
    );
    expect(elements['arg:service']).toMatchObject({
      type: 'static_select',
      initial_option: { value: 'payments' },
    });
    expect(elements['arg:replicas']).toMatchObject({
      type: 'number_input',
      initial_value: '3',
      is_decimal_allowed: false,
    });
    expect(elements['arg:dryRun']).toMatchObject({ type: 'checkboxes' });
    expect(elements['arg:dryRun']?.initial_options).toBeUndefined();
    expect(elements['arg:labels']).toMatchObject({ type: 'plain_text_input', multiline: true });
  });

  it('refuses values the schema or a deny rule refuses, in the form, changing nothing', async () => {
    const view = await openForm();
    const bad = await submit(view.private_metadata, form({ replicas: '11', labels: '{not json' }));
    expect(await bad.json()).toEqual({
      response_action: 'errors',
      errors: { 'arg:labels': expect.stringContaining('not valid JSON') },
    });
    const tooMany = await submit(view.private_metadata, form({ replicas: '11' }));
    expect(await tooMany.json()).toEqual({
      response_action: 'errors',
      errors: { 'arg:replicas': 'replicas must be <= 10' },
    });
    const denied = await submit(view.private_metadata, form({ replicas: '9' }));
    expect(await denied.json()).toEqual({
      response_action: 'errors',
      errors: {
        'arg:service':
          'Denied by rule 1 of scale: more than 8 replicas needs a capacity review. Change the arguments, or Reject the call.',
      },
    });
    expect((await fx.store.approvals.get(pending.approvalId))?.status).toBe('pending');
    expect(await fx.store.approvals.get(nextRoundOf(pending.approvalId))).toBeNull();
  });

  it("records the edited call as the next round, shows the diff, and approves it as the editor's approval", async () => {
    const view = await openForm();
    const res = await submit(
      view.private_metadata,
      form({ env: 'staging', replicas: '5', labels: '{"team":"sre"}' }),
    );
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
    await fx.bot.idle();
    const edited = {
      service: 'payments',
      env: 'staging',
      replicas: 5,
      dryRun: false,
      labels: { team: 'sre' },
    };
    const next = await fx.store.approvals.get(nextRoundOf(pending.approvalId));
    expect(next).toMatchObject({
      status: 'approved',
      decidedBy: MANAGER,
      args: edited,
      argsHash: argsHash(edited),
      original: { args: pending.record.args, argsHash: pending.record.argsHash },
      editedBy: MANAGER,
      editOf: pending.approvalId,
      card: { channel: CHANNEL, ts: pending.cardTs },
      // The tool's preview described the model's arguments.
      preview: null,
    });
    // Asked afresh: the expiry is that of the rule matching the edited call (here approvals' 60 min).
    expect(next!.expiresAt).toBe(next!.createdAt + 60 * 60_000);
    expect(await fx.store.approvals.get(pending.approvalId)).toMatchObject({
      status: 'superseded',
      editedTo: next?.approvalId,
    });
    expect(await fx.store.ledger.get(next!.approvalId)).toMatchObject({
      status: 'approved',
      argsHash: argsHash(edited),
    });
    const resumes = (await fx.jobs()).filter((j) => j.name === 'resume');
    expect(resumes.map((j) => j.data.approvalId)).toEqual([next?.approvalId]);
    const card = JSON.stringify(fx.fake.callsOf('chat.update').at(-1)?.args.blocks);
    expect(card).toContain(`Edited by <@${MANAGER}>`);
    expect(card).toContain('`env`: \\"prod\\" → \\"staging\\"');
    expect(card).toContain('`replicas`: 3 → 5');
    const audit = (await fx.store.audit.recent(5)).map((a) => a.entry);
    expect(audit.map((e) => [e.event, e.decision])).toEqual([
      ['decision', 'approved'],
      ['edit', 'superseded'],
    ]);
    expect(audit[1]).toMatchObject({ argsHash: pending.record.argsHash, editedArgsHash: argsHash(edited) });
    expect(audit[0]).toMatchObject({ originalArgsHash: pending.record.argsHash, argsHash: argsHash(edited) });
    // The old card's buttons carry the old round: a click on them is refused.
    const late = await fx.click({
      user: MANAGER,
      channel: CHANNEL,
      messageTs: pending.cardTs,
      threadTs: pending.threadTs,
      action: { actionId: ACTION_IDS.approve, value: pending.approvalId },
    });
    expect(late.status).toBe(200);
    await fx.bot.idle();
    expect(fx.fake.ephemerals(CHANNEL).at(-1)?.text).toContain('The arguments were edited');
  });
});

describe('Edit of a call with a plan', () => {
  it("drops the model's plan from the edited round: the worker plans the edited arguments before they run", async () => {
    await fx.cleanup();
    fx = await startBotFixture({ policyYaml: POLICY });
    const plan = { ok: true as const, text: 'payments: 3 replicas', hash: 'c'.repeat(64) };
    pending = await fx.pendingApproval({
      tool: 'scale',
      args: { service: 'payments', env: 'prod', replicas: 3, dryRun: false },
      policy: { schema: SCHEMA },
      plan,
    });
    expect((await fx.store.approvals.get(pending.approvalId))?.plan).toEqual(plan);
    const view = await openForm();
    expect((await submit(view.private_metadata, form({ replicas: '5' }))).status).toBe(200);
    await fx.bot.idle();
    const next = await fx.store.approvals.get(nextRoundOf(pending.approvalId));
    expect(next).toMatchObject({ editOf: pending.approvalId, args: { replicas: 5 } });
    expect(next?.plan).toBeUndefined();
  });
});
