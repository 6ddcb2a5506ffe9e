/**
 * Requests signed exactly as Slack signs them, and builders for what Slack sends to `/slack/events`:
 * Events API envelopes (JSON), interactivity payloads (`application/x-www-form-urlencoded` with
 * `payload=<json>`) and slash commands (form fields).
 *
 * Signature: `v0=` + hex HMAC-SHA256(signingSecret, `v0:${timestamp}:${rawBody}`), sent as
 * `X-Slack-Signature` with `X-Slack-Request-Timestamp` (seconds). Slack's retries add
 * `X-Slack-Retry-Num` and `X-Slack-Retry-Reason`.
 */
import { createHmac, randomBytes } from 'node:crypto';

/** The signing secret tests give the bot (SLACK_SIGNING_SECRET) unless they pick their own. */
export const TEST_SIGNING_SECRET = 'fake-signing-secret-0123456789abcdef';

/** Form content type, exactly: Bolt refuses `...; charset=utf-8` for interactivity. */
export const FORM_CONTENT_TYPE = 'application/x-www-form-urlencoded';
export const JSON_CONTENT_TYPE = 'application/json';

export interface SlackRequestBody {
  body: string;
  contentType: typeof FORM_CONTENT_TYPE | typeof JSON_CONTENT_TYPE;
}

/** Workspace identity shared by the builders; pass the fake Slack server's values. */
export interface SlackIdentity {
  teamId: string;
  appId: string;
  botUserId: string;
  /** Default `fake-workspace`. */
  teamDomain?: string;
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

export function slackSignature(secret: string, timestamp: number, rawBody: string): string {
  return `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${rawBody}`).digest('hex')}`;
}

export function signedHeaders(
  secret: string,
  rawBody: string,
  timestamp: number = nowSeconds(),
): { 'X-Slack-Request-Timestamp': string; 'X-Slack-Signature': string } {
  return {
    'X-Slack-Request-Timestamp': String(timestamp),
    'X-Slack-Signature': slackSignature(secret, timestamp, rawBody),
  };
}

function randomId(prefix: string, length = 10): string {
  return `${prefix}${randomBytes(length).toString('hex').toUpperCase().slice(0, length)}`;
}

/** A Slack-shaped message ts (`<seconds>.<6 digits>`), unique within the process. */
let tsSeq = 0;
export function makeTs(): string {
  tsSeq += 1;
  return `${nowSeconds()}.${String(tsSeq % 1e6).padStart(6, '0')}`;
}

export function makeTriggerId(): string {
  return `${Date.now()}.${Math.floor(Math.random() * 1e12)}.${randomBytes(16).toString('hex')}`;
}

// ---------------------------------------------------------------------------------------------------
// Events API
// ---------------------------------------------------------------------------------------------------

export interface MessageInput {
  channel: string;
  user: string;
  text: string;
  /** Default: a fresh ts. Use the fake server's `userMessage(...).ts` to tie the event to a message. */
  ts?: string;
  /** For a reply in a thread. */
  threadTs?: string;
  /** Extra fields merged into the event (e.g. `subtype`, `bot_id`, `edited`). */
  extra?: Record<string, unknown>;
}

export type SlackEvent = Record<string, unknown> & { type: string };

function messageFields(input: MessageInput, teamId: string) {
  const ts = input.ts ?? makeTs();
  return {
    user: input.user,
    text: input.text,
    ts,
    event_ts: ts,
    channel: input.channel,
    team: teamId,
    client_msg_id: randomId('', 32).toLowerCase(),
    ...(input.threadTs ? { thread_ts: input.threadTs } : {}),
  };
}

/** `app_mention` in a channel; `text` should contain `<@BOTUSERID>` as Slack's does. */
export function appMentionEvent(id: SlackIdentity, input: MessageInput): SlackEvent {
  return { type: 'app_mention', ...messageFields(input, id.teamId), ...input.extra };
}

/** `message.im`: a direct message to the bot (channel `D…`). */
export function directMessageEvent(id: SlackIdentity, input: MessageInput): SlackEvent {
  return { type: 'message', channel_type: 'im', ...messageFields(input, id.teamId), ...input.extra };
}

/** `message.channels`: a reply in a thread (`threadTs` required) without a mention. */
export function threadReplyEvent(
  id: SlackIdentity,
  input: MessageInput & { threadTs: string; parentUserId?: string },
): SlackEvent {
  return {
    type: 'message',
    channel_type: input.channel.startsWith('G') ? 'group' : 'channel',
    ...messageFields(input, id.teamId),
    parent_user_id: input.parentUserId ?? id.botUserId,
    ...input.extra,
  };
}

export interface EventEnvelope {
  token: string;
  team_id: string;
  api_app_id: string;
  event: SlackEvent;
  type: 'event_callback';
  event_id: string;
  event_time: number;
  authorizations: Record<string, unknown>[];
  is_ext_shared_channel: boolean;
  event_context: string;
}

/** Wraps an event as Slack delivers it; pass the same `eventId` again to imitate Slack's retry. */
export function eventEnvelope(
  id: SlackIdentity,
  event: SlackEvent,
  opts: { eventId?: string } = {},
): EventEnvelope {
  return {
    token: 'deprecated-verification-token',
    team_id: id.teamId,
    api_app_id: id.appId,
    event,
    type: 'event_callback',
    event_id: opts.eventId ?? randomId('Ev', 10),
    event_time: nowSeconds(),
    authorizations: [
      {
        enterprise_id: null,
        team_id: id.teamId,
        user_id: id.botUserId,
        is_bot: true,
        is_enterprise_install: false,
      },
    ],
    is_ext_shared_channel: false,
    event_context: randomId('4-', 40),
  };
}

export function eventBody(envelope: EventEnvelope): SlackRequestBody {
  return { body: JSON.stringify(envelope), contentType: JSON_CONTENT_TYPE };
}

// ---------------------------------------------------------------------------------------------------
// Interactivity
// ---------------------------------------------------------------------------------------------------

function userObject(id: SlackIdentity, userId: string) {
  return { id: userId, username: userId.toLowerCase(), name: userId.toLowerCase(), team_id: id.teamId };
}

function teamObject(id: SlackIdentity) {
  return { id: id.teamId, domain: id.teamDomain ?? 'fake-workspace' };
}

export interface BlockActionInput {
  user: string;
  channel: string;
  /** ts of the message carrying the button (the approval card). */
  messageTs: string;
  /** Thread of that message, when it is a reply. */
  threadTs?: string;
  action: { actionId: string; value: string; blockId?: string; text?: string };
  /** The message as the click's payload carries it (text, blocks); default a minimal bot message. */
  message?: Record<string, unknown>;
  triggerId?: string;
}

/** A `block_actions` payload for a button click on a message. */
export function blockActionsPayload(id: SlackIdentity, input: BlockActionInput): Record<string, unknown> {
  const actionTs = `${nowSeconds()}.${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`;
  return {
    type: 'block_actions',
    user: userObject(id, input.user),
    api_app_id: id.appId,
    token: 'deprecated-verification-token',
    container: {
      type: 'message',
      message_ts: input.messageTs,
      channel_id: input.channel,
      is_ephemeral: false,
      ...(input.threadTs ? { thread_ts: input.threadTs } : {}),
    },
    trigger_id: input.triggerId ?? makeTriggerId(),
    team: teamObject(id),
    enterprise: null,
    is_enterprise_install: false,
    channel: { id: input.channel, name: input.channel.toLowerCase() },
    message: {
      type: 'message',
      user: id.botUserId,
      ts: input.messageTs,
      ...(input.threadTs ? { thread_ts: input.threadTs } : {}),
      text: '',
      ...input.message,
    },
    state: { values: {} },
    response_url: `https://hooks.slack.com/actions/${id.teamId}/${randomId('', 13)}/${randomId('', 24)}`,
    actions: [
      {
        action_id: input.action.actionId,
        block_id: input.action.blockId ?? randomId('', 5),
        text: { type: 'plain_text', text: input.action.text ?? input.action.actionId, emoji: true },
        value: input.action.value,
        type: 'button',
        action_ts: actionTs,
      },
    ],
  };
}

export interface ViewSubmissionInput {
  user: string;
  callbackId: string;
  privateMetadata: string;
  /** `state.values`: `{ [blockId]: { [actionId]: { type, value } } }` (or selected_option(s) for selects). */
  values: Record<string, Record<string, { type: string; value?: string | null; [field: string]: unknown }>>;
  viewId?: string;
  /** The blocks of the submitted view (defaults to none). */
  blocks?: unknown[];
}

/** A `view_submission` payload for a submitted modal. */
export function viewSubmissionPayload(
  id: SlackIdentity,
  input: ViewSubmissionInput,
): Record<string, unknown> {
  const viewId = input.viewId ?? randomId('V', 10);
  return {
    type: 'view_submission',
    team: teamObject(id),
    user: userObject(id, input.user),
    api_app_id: id.appId,
    token: 'deprecated-verification-token',
    trigger_id: makeTriggerId(),
    view: {
      id: viewId,
      team_id: id.teamId,
      type: 'modal',
      blocks: input.blocks ?? [],
      private_metadata: input.privateMetadata,
      callback_id: input.callbackId,
      state: { values: input.values },
      hash: `${nowSeconds()}.${randomId('', 8)}`,
      title: { type: 'plain_text', text: 'Modal', emoji: true },
      clear_on_close: false,
      notify_on_close: false,
      close: null,
      submit: null,
      previous_view_id: null,
      root_view_id: viewId,
      app_id: id.appId,
      external_id: '',
      app_installed_team_id: id.teamId,
      bot_id: 'B0FAKEBOT',
    },
    response_urls: [],
    is_enterprise_install: false,
    enterprise: null,
  };
}

/** Interactivity as Slack posts it: a form with one field, `payload`, holding the JSON. */
export function interactivityBody(payload: Record<string, unknown>): SlackRequestBody {
  return {
    body: new URLSearchParams({ payload: JSON.stringify(payload) }).toString(),
    contentType: FORM_CONTENT_TYPE,
  };
}

// ---------------------------------------------------------------------------------------------------
// Slash commands
// ---------------------------------------------------------------------------------------------------

export interface SlashCommandInput {
  user: string;
  channel: string;
  text: string;
  /** Default `/loopgate`. */
  command?: string;
  triggerId?: string;
}

export function slashCommandBody(id: SlackIdentity, input: SlashCommandInput): SlackRequestBody {
  const fields = {
    token: 'deprecated-verification-token',
    team_id: id.teamId,
    team_domain: id.teamDomain ?? 'fake-workspace',
    channel_id: input.channel,
    channel_name: input.channel.toLowerCase(),
    user_id: input.user,
    user_name: input.user.toLowerCase(),
    command: input.command ?? '/loopgate',
    text: input.text,
    api_app_id: id.appId,
    is_enterprise_install: 'false',
    response_url: `https://hooks.slack.com/commands/${id.teamId}/${randomId('', 13)}/${randomId('', 24)}`,
    trigger_id: input.triggerId ?? makeTriggerId(),
  };
  return { body: new URLSearchParams(fields).toString(), contentType: FORM_CONTENT_TYPE };
}

// ---------------------------------------------------------------------------------------------------
// Sending
// ---------------------------------------------------------------------------------------------------

export interface PostSignedOptions extends SlackRequestBody {
  /** Seconds; default now. Pass `nowSeconds() - 6 * 60` for a stale request. */
  timestamp?: number;
  /** Default TEST_SIGNING_SECRET. Pass another secret to forge a bad signature. */
  secret?: string;
  /** Replaces the computed signature (e.g. `v0=deadbeef`). */
  signature?: string;
  /** Adds X-Slack-Retry-Num (and X-Slack-Retry-Reason, default `http_timeout`) as Slack's retries do. */
  retryNum?: number;
  retryReason?: string;
}

/** POSTs a body signed as Slack would; resolves with the response (any status). */
export function postSigned(url: string, opts: PostSignedOptions): Promise<Response> {
  const timestamp = opts.timestamp ?? nowSeconds();
  const headers: Record<string, string> = {
    'Content-Type': opts.contentType,
    ...signedHeaders(opts.secret ?? TEST_SIGNING_SECRET, opts.body, timestamp),
  };
  if (opts.signature !== undefined) headers['X-Slack-Signature'] = opts.signature;
  if (opts.retryNum !== undefined) {
    headers['X-Slack-Retry-Num'] = String(opts.retryNum);
    headers['X-Slack-Retry-Reason'] = opts.retryReason ?? 'http_timeout';
  }
  return fetch(url, { method: 'POST', headers, body: opts.body });
}
