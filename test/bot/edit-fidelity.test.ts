/**
 * Edit never changes what it was not asked to change (issue 21, item 2): a field the form cannot hold
 * whole (Slack's inputs take 3,000 characters) is shown read-only and kept exactly as it was, and a form
 * submitted as it was opened changes nothing (no new round, no approval), whatever Slack sends back for
 * fields the call did not have.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ACTION_IDS, CALLBACK_IDS } from '../../src/slack/ids.js';
import { nextRoundOf } from '../../src/store/index.js';
import { interactivityBody, makeTriggerId, viewSubmissionPayload } from '../fakes/slack-signing.js';
import { type BotFixture, CHANNEL, MANAGER, type PendingApproval, startBotFixture } from './bot-fixture.js';

const POST_SCHEMA = {
  type: 'object',
  properties: {
    channel: { type: 'string' },
    text: { type: 'string' },
    blocks: { type: 'array', items: { type: 'object' } },
  },
  required: ['channel', 'text'],
  additionalProperties: false,
};

const SCALE_SCHEMA = {
  type: 'object',
  properties: {
    service: { type: 'string', enum: ['payments', 'search'] },
    replicas: { type: 'integer', minimum: 1, default: 2 },
    dryRun: { type: 'boolean' },
    note: { type: 'string' },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
  },
  required: ['service'],
  additionalProperties: false,
};

let fx: BotFixture;
afterEach(async () => {
  await fx.cleanup();
});

type FormView = { private_metadata: string; blocks: Array<Record<string, unknown>> };

async function openForm(pending: PendingApproval): Promise<FormView> {
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
  const opened = fx.fake.callsOf('views.open').find((c) => c.args.trigger_id === triggerId);
  return opened?.args.view as FormView;
}

async function submit(view: FormView, values: Record<string, unknown>) {
  const payload = viewSubmissionPayload(fx.id, {
    user: MANAGER,
    callbackId: CALLBACK_IDS.edit,
    privateMetadata: view.private_metadata,
    values: values as never,
  });
  const res = await fx.post(interactivityBody(payload));
  await fx.bot.idle();
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

describe('Edit keeps what it was not asked to change', () => {
  it('editing only the channel of a 3,600-character message keeps every character of it', async () => {
    fx = await startBotFixture();
    const text = `${'Status update. '.repeat(239)}END`;
    expect(text.length).toBeGreaterThan(3_500);
    const pending = await fx.pendingApproval({
      tool: 'post_message',
      args: { channel: 'C0OLD', text },
      policy: { schema: POST_SCHEMA },
      approvers: { users: [MANAGER], groups: [] },
    });
    const view = await openForm(pending);
    const inputs = view.blocks.filter((b) => b.type === 'input').map((b) => b.block_id);
    expect(inputs).toEqual(['arg:channel', 'arg:blocks']);
    expect(JSON.stringify(view.blocks)).toContain('too long for a form field');
    // What Slack sends back: the inputs only (the read-only text is no input).
    const answer = await submit(view, {
      'arg:channel': { value: { type: 'plain_text_input', value: 'C0NEW' } },
      'arg:blocks': { value: { type: 'plain_text_input', value: null } },
    });
    expect(answer).toBeNull();
    const next = await fx.store.approvals.get(nextRoundOf(pending.approvalId));
    expect(next?.args).toEqual({ channel: 'C0NEW', text });
  });

  it('a form submitted as it was opened changes nothing', async () => {
    fx = await startBotFixture({
      policyYaml: `approvals: { approvers: [${MANAGER}] }\ncustom: [{ path: ./scale.ts, name: scale }]\n`,
    });
    // No replicas (its default is 2), no dryRun, an empty note, labels as the model wrote them.
    const pending = await fx.pendingApproval({
      tool: 'scale',
      args: { service: 'payments', note: '', labels: { team: 'core', tier: '1' } },
      policy: { schema: SCALE_SCHEMA },
    });
    const view = await openForm(pending);
    const initial = Object.fromEntries(
      view.blocks
        .filter((b) => b.type === 'input')
        .map((b) => [b.block_id, b.element as Record<string, unknown>]),
    );
    // Slack returns an empty input as null, and an unticked checkbox as no options.
    const answer = await submit(view, {
      'arg:service': { value: { type: 'static_select', selected_option: { value: 'payments' } } },
      'arg:replicas': { value: { type: 'number_input', value: null } },
      'arg:dryRun': { value: { type: 'checkboxes', selected_options: [] } },
      'arg:note': { value: { type: 'plain_text_input', value: null } },
      'arg:labels': {
        value: { type: 'plain_text_input', value: initial['arg:labels']?.initial_value as string },
      },
    });
    expect(answer).toEqual({ response_action: 'errors', errors: { 'arg:service': 'Nothing was changed.' } });
    expect(await fx.store.approvals.get(nextRoundOf(pending.approvalId))).toBeNull();
    expect((await fx.store.approvals.get(pending.approvalId))?.status).toBe('pending');
  });
});
