/**
 * What people do in the stand-in channel, delivered to the bot exactly as Slack delivers it: a signed
 * Events API envelope for a message, a signed `block_actions` payload for a button click, a signed
 * `view_submission` for a modal. Messages are also stored in the stand-in Slack first, so that the
 * bot's reactions land on them and the thread shows them.
 */
import { z } from 'zod';
import { CALLBACK_IDS, REJECT_REASON_INPUT } from '../../src/slack/ids.js';
import type { StoredView } from '../../test/fakes/slack-api-server.js';
import {
  appMentionEvent,
  blockActionsPayload,
  eventBody,
  eventEnvelope,
  interactivityBody,
  type PostSignedOptions,
  postSigned,
  threadReplyEvent,
  viewSubmissionPayload,
} from '../../test/fakes/slack-signing.js';
import { DemoError } from './errors.js';
import type { Stage } from './stage.js';

export interface SentMessage {
  ts: string;
  /** The thread it belongs to (its own ts when it starts one). */
  threadTs: string;
  eventId: string;
}

async function deliver(
  stage: Stage,
  what: string,
  body: Omit<PostSignedOptions, 'secret'>,
): Promise<Response> {
  const res = await postSigned(stage.eventsUrl, { ...body, secret: stage.signingSecret });
  if (res.status !== 200) {
    throw new DemoError(`the bot answered HTTP ${res.status} to ${what}: ${await res.text()}`);
  }
  return res;
}

/**
 * `user` writes `text` mentioning the bot, in a new thread or in `threadTs`: an `app_mention` event, as
 * Slack sends for "@loopgate …".
 */
export async function mentionBot(
  stage: Stage,
  input: { channel: string; user: string; text: string; threadTs?: string },
): Promise<SentMessage> {
  const text = `<@${stage.workspace.botUserId}> ${input.text}`;
  const stored = stage.slack.userMessage({ ...input, text });
  const envelope = eventEnvelope(
    stage.workspace,
    appMentionEvent(stage.workspace, { ...input, text, ts: stored.ts }),
  );
  await deliver(stage, 'a mention', eventBody(envelope));
  return { ts: stored.ts, threadTs: input.threadTs ?? stored.ts, eventId: envelope.event_id };
}

/** `user` replies in a thread without a mention: a `message` event, taken where loopgate works. */
export async function replyInThread(
  stage: Stage,
  input: { channel: string; user: string; text: string; threadTs: string },
): Promise<SentMessage> {
  const stored = stage.slack.userMessage(input);
  const envelope = eventEnvelope(
    stage.workspace,
    threadReplyEvent(stage.workspace, { ...input, ts: stored.ts }),
  );
  await deliver(stage, 'a thread reply', eventBody(envelope));
  return { ts: stored.ts, threadTs: input.threadTs, eventId: envelope.event_id };
}

export interface ButtonClick {
  user: string;
  channel: string;
  /** The message carrying the button. */
  messageTs: string;
  threadTs?: string;
  actionId: string;
  value: string;
  text?: string;
}

/** `user` clicks a button on a message. */
export async function clickButton(stage: Stage, click: ButtonClick): Promise<void> {
  const payload = blockActionsPayload(stage.workspace, {
    user: click.user,
    channel: click.channel,
    messageTs: click.messageTs,
    ...(click.threadTs ? { threadTs: click.threadTs } : {}),
    action: { actionId: click.actionId, value: click.value, ...(click.text ? { text: click.text } : {}) },
  });
  await deliver(stage, `a click on ${click.actionId}`, interactivityBody(payload));
}

function jsonOrNull(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** The bot's answer to a submission it could not record: the form is replaced by a notice. */
const noticeAnswer = z.object({
  response_action: z.literal('update'),
  view: z.object({ blocks: z.array(z.unknown()) }),
});

/**
 * `user` submits the reject-reason modal the bot opened. Resolves with null when the bot closed it (the
 * rejection is recorded), else with the blocks of the notice that replaced the form.
 */
export async function submitRejectReason(
  stage: Stage,
  input: { user: string; view: StoredView; reason: string },
): Promise<unknown[] | null> {
  const payload = viewSubmissionPayload(stage.workspace, {
    user: input.user,
    viewId: input.view.id,
    callbackId: CALLBACK_IDS.rejectReason,
    privateMetadata: String(input.view.view.private_metadata ?? ''),
    values: {
      [REJECT_REASON_INPUT.blockId]: {
        [REJECT_REASON_INPUT.actionId]: { type: 'plain_text_input', value: input.reason },
      },
    },
  });
  const res = await deliver(stage, 'the reject-reason form', interactivityBody(payload));
  const body = (await res.text()).trim();
  if (body === '') return null;
  const notice = noticeAnswer.safeParse(jsonOrNull(body));
  if (!notice.success) throw new DemoError(`unexpected answer to the reject-reason form: ${body}`);
  return notice.data.view.blocks;
}
