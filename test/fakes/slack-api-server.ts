/**
 * A fake Slack Web API: a real HTTP server on 127.0.0.1 (port 0) that answers, like Slack, every method
 * loopgate uses, records every call, and keeps each channel's messages so a test can read a thread as
 * Slack would show it (edits applied, deleted messages gone).
 *
 * Other processes reach it over HTTP: start it in the test, then give the bot and worker
 * `SLACK_API_URL=${fake.apiUrl}` (it ends with `/api/`, as @slack/web-api expects) and
 * `SLACK_BOT_TOKEN=${fake.token}`. Bolt's WebClient posts `application/x-www-form-urlencoded` bodies with
 * objects (blocks, view, …) as JSON strings; JSON bodies are accepted too. The recorder lives in the test
 * process only: assert there with `calls`, `callsOf`, `waitForCall`, `thread`.
 *
 * Like Slack it checks the bot token (`Authorization: Bearer xoxb-…` or a `token` field), refuses Block
 * Kit payloads past Slack's limits (`invalid_blocks`), answers unknown methods with `unknown_method`, and
 * can be told to fail the next calls of a method with a 429 + Retry-After, an `{ ok: false, error }` or
 * an HTTP status. Streams and agent sessions are checked and recorded by slack-agent-surfaces.ts.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type AgentSurfaceOptions,
  agentSurfaceHandlers,
  type FakeAgentSurfaces,
} from './slack-agent-surfaces.js';
import { type FakeRateLimit, FakeRateLimiter, SLACK_DOCUMENTED_LIMITS } from './slack-rate-limits.js';

export interface FakeUser {
  id: string;
  name: string;
  real_name: string;
  tz: string;
  tz_label: string;
  tz_offset: number;
  is_bot: boolean;
  /** Found by users.lookupByEmail (case-insensitive); a user without one is not found by email. */
  email?: string;
}

export interface FakeSlackOptions {
  /** Default `xoxb-fake-token`. */
  token?: string;
  /** Default `UBOT0001`. */
  botUserId?: string;
  /** Default `BBOT0001`. */
  botId?: string;
  /** Default `T0TEAM001`. */
  teamId?: string;
  /** Default `A0APP0001`. */
  appId?: string;
  /** Profiles by user id; any other `U…`/`W…` id gets a generated profile in `defaultTz`. */
  users?: Record<string, Partial<FakeUser>>;
  /** Default `UTC`. */
  defaultTz?: string;
  /** Members by user group id (`S…`). */
  groups?: Record<string, string[]>;
  /** Members by conversation id (conversations.members); any other conversation is `channel_not_found`. */
  channelMembers?: Record<string, string[]>;
  /**
   * When true, reactions and permalinks on a message the fake never saw fail with `message_not_found`.
   * Default false: the reaction is kept on a stub, so tests need not register every question first.
   */
  strictMessages?: boolean;
  /**
   * Socket Mode: the app-level token (`xapp-…`) `apps.connections.open` accepts, and the WebSocket URL
   * it answers with (see slack-socket-mode.ts). Without it the method fails with `invalid_auth`.
   */
  socketMode?: { appToken: string; url: () => string };
  /** Streams and agent sessions (slack-agent-surfaces.ts): lifetime, size cap, or a refusal. */
  agentSurfaces?: AgentSurfaceOptions;
  /**
   * Enforce Slack's rate limits (slack-rate-limits.ts): `true` for the documented ones, or a table of
   * limits by method. Default off: the fake never says 429 unless told to with `failNext`.
   */
  rateLimits?: boolean | Readonly<Record<string, FakeRateLimit>>;
  /**
   * The bot token's granted scopes, sent back as Slack does in the `x-oauth-scopes` header of every
   * authenticated answer. A method below (METHOD_SCOPES) without its scope fails like Slack's:
   * `{ ok: false, error: 'missing_scope', needed, provided }`. Default: every scope of
   * slack-app-manifest.yaml.
   */
  scopes?: readonly string[];
  /**
   * When true, conversations.info knows only the channels of `channelMembers` (others are
   * `channel_not_found`) and chat.postMessage to a channel whose members lack the bot is
   * `not_in_channel`. Default false: any C…/G…/D… id exists and has the bot.
   */
  strictChannels?: boolean;
  /** When true, users.info knows only the ids of `users` (others are `user_not_found`). Default false. */
  strictUsers?: boolean;
}

/** The bot scopes slack-app-manifest.yaml asks for. */
export const MANIFEST_SCOPES: readonly string[] = [
  'app_mentions:read',
  'channels:history',
  'groups:history',
  'im:history',
  'chat:write',
  'assistant:write',
  'reactions:write',
  'usergroups:read',
  'users:read',
  'users:read.email',
  'channels:read',
  'groups:read',
  'commands',
];

/** Scopes a method needs (Slack accepts any one of a list: a channel's kind decides which). */
const METHOD_SCOPES: Record<string, (args: Record<string, unknown>) => string> = {
  'chat.postMessage': () => 'chat:write',
  'chat.update': () => 'chat:write',
  'chat.postEphemeral': () => 'chat:write',
  'reactions.add': () => 'reactions:write',
  'reactions.remove': () => 'reactions:write',
  'users.info': () => 'users:read',
  'users.lookupByEmail': () => 'users:read.email',
  'usergroups.users.list': () => 'usergroups:read',
  'conversations.info': (args) =>
    String(args.channel ?? '').startsWith('G') ? 'groups:read' : 'channels:read',
  'conversations.members': (args) =>
    String(args.channel ?? '').startsWith('G') ? 'groups:read' : 'channels:read',
};

export interface RecordedCall {
  method: string;
  args: Record<string, unknown>;
  headers: IncomingHttpHeaders;
  /** HTTP status answered. */
  status: number;
  /** JSON body answered (null for a scripted HTTP failure without body). */
  response: Record<string, unknown> | null;
  at: number;
}

export interface StoredMessage {
  channel: string;
  ts: string;
  thread_ts?: string;
  user: string;
  bot_id?: string;
  text: string;
  blocks?: unknown[];
  /** Set once chat.update changed the message. */
  edited?: { user: string; ts: string };
  /** Earlier versions, oldest first. */
  history: { text: string; blocks?: unknown[] }[];
  reactions: { name: string; users: string[] }[];
  deleted: boolean;
  /** True for a stub created by a reaction on a message the fake never saw. */
  stub?: boolean;
}

export interface StoredEphemeral {
  channel: string;
  user: string;
  text: string;
  blocks?: unknown[];
  thread_ts?: string;
  message_ts: string;
}

export interface StoredView {
  id: string;
  hash: string;
  view: Record<string, unknown>;
  trigger_id?: string;
  user_id?: string;
}

export type Failure =
  /** HTTP 429 with `Retry-After: <seconds>` (default 1; 0 makes @slack/web-api retry at once). */
  | { kind: 'rate_limited'; retryAfterSec?: number }
  /** HTTP 200 `{ ok: false, error }`. */
  | { kind: 'error'; error: string }
  /** A bare HTTP status (e.g. 500, 503). */
  | { kind: 'http'; status: number };

export interface FakeSlack {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** `${url}/api/`: the SLACK_API_URL to give the processes under test. */
  apiUrl: string;
  token: string;
  botUserId: string;
  botId: string;
  teamId: string;
  appId: string;
  /** Every call in arrival order, failed ones included. */
  calls: RecordedCall[];
  callsOf(method: string): RecordedCall[];
  /** Resolves with the first call (past or future) of `method` matching `predicate`. */
  waitForCall(
    method: string,
    predicate?: (call: RecordedCall) => boolean,
    timeoutMs?: number,
  ): Promise<RecordedCall>;
  /** The thread's parent (when known) and its replies, by ts, as Slack shows them now. */
  thread(channel: string, ts: string): StoredMessage[];
  /** Every visible message of a channel, by ts. */
  messages(channel: string): StoredMessage[];
  message(channel: string, ts: string): StoredMessage | undefined;
  /** Stores a message written by a person (e.g. the question a test's event refers to) and returns it. */
  userMessage(input: { channel: string; user: string; text: string; threadTs?: string }): StoredMessage;
  ephemerals(channel?: string): StoredEphemeral[];
  /** Modals by view id. */
  views: Map<string, StoredView>;
  /** The App Home last published for a user. */
  home(userId: string): Record<string, unknown> | undefined;
  /** The assistant thread status last set (empty string once cleared). */
  assistantStatus(channel: string, threadTs: string): string | undefined;
  /** The next `n` calls of `method` fail as described, before any other check. */
  failNext(method: string, n: number, failure: Failure): void;
  setGroupMembers(groupId: string, users: string[]): void;
  /** Replaces a channel's members (conversations.members, conversations.info's is_member). */
  setChannelMembers(channel: string, users: string[]): void;
  /** Names a channel (conversations.info's `name`; default the id in lower case). */
  setChannelName(channel: string, name: string): void;
  /** Replaces the bot token's granted scopes (see FakeSlackOptions.scopes). */
  setScopes(scopes: readonly string[]): void;
  setUser(user: Partial<FakeUser> & { id: string }): void;
  /** Streams and session statuses as Slack would hold them (see slack-agent-surfaces.ts). */
  surfaces: FakeAgentSurfaces;
  /** 429s the rate limits answered, by method (empty unless `rateLimits` is on). */
  rateLimited: ReadonlyMap<string, number>;
  close(): Promise<void>;
}

type Args = Record<string, unknown>;
type Answer = { status?: number; body: Args | null; headers?: Record<string, string> };
type Handler = (args: Args) => Answer;

/** Form fields @slack/web-api sends as JSON strings. */
const JSON_FIELDS = new Set(['blocks', 'attachments', 'view', 'metadata', 'chunks', 'unfurls', 'prompts']);

const LIMITS = {
  messageBlocks: 50,
  viewBlocks: 100,
  sectionText: 3_000,
  headerText: 150,
  buttonText: 75,
  buttonValue: 2_000,
  markdown: 12_000,
  contextElements: 10,
  actionsElements: 25,
  modalTitle: 24,
  privateMetadata: 3_000,
};

function ok(body: Args = {}): Answer {
  return { body: { ok: true, ...body } };
}

function fail(error: string, extra: Args = {}): Answer {
  return { body: { ok: false, error, ...extra } };
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Args) : undefined;
}

function textOf(value: unknown): string {
  return typeof record(value)?.text === 'string' ? String(record(value)?.text) : '';
}

/** Problems Slack would report for these blocks on a message or a view; empty when valid. */
export function blockProblems(blocks: unknown, surface: 'message' | 'view'): string[] {
  if (!Array.isArray(blocks)) return ['blocks must be an array'];
  const problems: string[] = [];
  const max = surface === 'message' ? LIMITS.messageBlocks : LIMITS.viewBlocks;
  if (blocks.length > max) problems.push(`no more than ${max} items allowed [json-pointer:/blocks]`);
  let markdown = 0;
  for (const [i, raw] of blocks.entries()) {
    const block = record(raw);
    const at = `[json-pointer:/blocks/${i}]`;
    if (!block) {
      problems.push(`block must be an object ${at}`);
      continue;
    }
    switch (block.type) {
      case 'section':
        if (textOf(block.text).length > LIMITS.sectionText) problems.push(`section text too long ${at}`);
        break;
      case 'header':
        if (textOf(block.text).length > LIMITS.headerText) problems.push(`header text too long ${at}`);
        break;
      case 'markdown':
        if (surface === 'view') problems.push(`markdown blocks are not allowed in views ${at}`);
        markdown += typeof block.text === 'string' ? block.text.length : 0;
        break;
      case 'context':
        if (!Array.isArray(block.elements) || block.elements.length > LIMITS.contextElements) {
          problems.push(`context needs 1-${LIMITS.contextElements} elements ${at}`);
        }
        break;
      case 'context_actions': {
        // Feedback and icon buttons: messages only, 1-5 elements; a feedback button's text is plain
        // text of at most 75 characters and its value at most 2,000.
        if (surface === 'view') problems.push(`context_actions blocks are not allowed in views ${at}`);
        const elements = Array.isArray(block.elements) ? block.elements.map(record) : [];
        if (elements.length === 0 || elements.length > 5)
          problems.push(`context_actions needs 1-5 elements ${at}`);
        for (const el of elements) {
          if (el?.type !== 'feedback_buttons') {
            if (el?.type !== 'icon_button') problems.push(`unsupported context_actions element ${at}`);
            continue;
          }
          for (const side of ['positive_button', 'negative_button']) {
            const b = record(el[side]);
            const text = record(b?.text);
            if (!b || text?.type !== 'plain_text' || textOf(text).length === 0 || textOf(text).length > 75) {
              problems.push(`feedback_buttons.${side} needs a plain_text text of 1-75 characters ${at}`);
            }
            if (typeof b?.value !== 'string' || b.value.length === 0 || b.value.length > 2_000) {
              problems.push(`feedback_buttons.${side} needs a value of 1-2000 characters ${at}`);
            }
          }
        }
        break;
      }
      case 'actions': {
        const elements = Array.isArray(block.elements) ? block.elements : [];
        if (elements.length === 0 || elements.length > LIMITS.actionsElements) {
          problems.push(`actions needs 1-${LIMITS.actionsElements} elements ${at}`);
        }
        for (const el of elements.map(record)) {
          if (el?.type !== 'button') continue;
          if (textOf(el.text).length > LIMITS.buttonText) problems.push(`button text too long ${at}`);
          if (typeof el.value === 'string' && el.value.length > LIMITS.buttonValue) {
            problems.push(`button value too long ${at}`);
          }
        }
        break;
      }
    }
  }
  if (markdown > LIMITS.markdown) problems.push(`markdown blocks exceed ${LIMITS.markdown} characters`);
  return problems;
}

function viewProblems(view: Args | undefined): string[] {
  if (!view) return ['view is required'];
  const problems = blockProblems(view.blocks, 'view');
  if (view.type === 'modal' && textOf(view.title).length > LIMITS.modalTitle) problems.push('title too long');
  if (typeof view.private_metadata === 'string' && view.private_metadata.length > LIMITS.privateMetadata) {
    problems.push('private_metadata too long');
  }
  return problems;
}

function parseArgs(raw: string, contentType: string): Args {
  if (contentType.startsWith('application/json')) {
    const parsed: unknown = raw === '' ? {} : JSON.parse(raw);
    return record(parsed) ?? {};
  }
  const args: Args = {};
  for (const [key, value] of new URLSearchParams(raw)) {
    args[key] = JSON_FIELDS.has(key) ? JSON.parse(value) : value;
  }
  return args;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export async function startFakeSlack(opts: FakeSlackOptions = {}): Promise<FakeSlack> {
  const token = opts.token ?? 'xoxb-fake-token';
  const botUserId = opts.botUserId ?? 'UBOT0001';
  const botId = opts.botId ?? 'BBOT0001';
  const teamId = opts.teamId ?? 'T0TEAM001';
  const appId = opts.appId ?? 'A0APP0001';
  const defaultTz = opts.defaultTz ?? 'UTC';

  const calls: RecordedCall[] = [];
  const limiter = new FakeRateLimiter(
    opts.rateLimits === true ? SLACK_DOCUMENTED_LIMITS : opts.rateLimits || {},
  );
  const waiters: {
    method: string;
    predicate: (c: RecordedCall) => boolean;
    resolve: (c: RecordedCall) => void;
  }[] = [];
  const failures = new Map<string, Failure[]>();
  const channels = new Map<string, Map<string, StoredMessage>>();
  const ephemeralStore: StoredEphemeral[] = [];
  const views = new Map<string, StoredView>();
  const homes = new Map<string, Record<string, unknown>>();
  const statuses = new Map<string, string>();
  const groups = new Map(Object.entries(opts.groups ?? {}));
  const channelMembers = new Map(Object.entries(opts.channelMembers ?? {}));
  const channelNames = new Map<string, string>();
  const users = new Map<string, Partial<FakeUser>>(Object.entries(opts.users ?? {}));
  let scopes = [...(opts.scopes ?? MANIFEST_SCOPES)];

  let seq = 0;
  const baseSec = Math.floor(Date.now() / 1000);
  /** Slack-shaped, strictly increasing timestamps: `<seconds>.<6 digits>`. */
  const nextTs = () => {
    seq += 1;
    return `${baseSec + Math.floor(seq / 1e6)}.${String(seq % 1e6).padStart(6, '0')}`;
  };
  let viewSeq = 0;

  const channelStore = (channel: string) => {
    let store = channels.get(channel);
    if (!store) {
      store = new Map();
      channels.set(channel, store);
    }
    return store;
  };
  const visible = (list: Iterable<StoredMessage>) =>
    [...list]
      .filter((m) => !m.deleted)
      .sort((a, b) => Number(a.ts) - Number(b.ts) || a.ts.localeCompare(b.ts));

  const userProfile = (id: string): FakeUser | undefined => {
    const known = users.get(id);
    if (!known && (opts.strictUsers || !/^[UW][A-Z0-9]+$/.test(id))) return undefined;
    const name = known?.name ?? id.toLowerCase();
    return {
      id,
      name,
      real_name: known?.real_name ?? name,
      tz: known?.tz ?? defaultTz,
      tz_label: known?.tz_label ?? known?.tz ?? defaultTz,
      tz_offset: known?.tz_offset ?? 0,
      is_bot: known?.is_bot ?? id === botUserId,
    };
  };

  const botMessage = (m: StoredMessage) => ({
    type: 'message',
    text: m.text,
    user: m.user,
    ...(m.bot_id ? { bot_id: m.bot_id, app_id: appId } : {}),
    team: teamId,
    ts: m.ts,
    ...(m.thread_ts ? { thread_ts: m.thread_ts } : {}),
    ...(m.blocks ? { blocks: m.blocks } : {}),
    ...(m.edited ? { edited: m.edited } : {}),
  });

  /** A message for reactions/permalinks: known, a stub when lenient, or undefined when strict. */
  const target = (channel: string, ts: string): StoredMessage | undefined => {
    const found = channelStore(channel).get(ts);
    if (found || opts.strictMessages) return found?.deleted ? undefined : found;
    const stub: StoredMessage = {
      channel,
      ts,
      user: 'UNKNOWN',
      text: '',
      history: [],
      reactions: [],
      deleted: false,
      stub: true,
    };
    channelStore(channel).set(ts, stub);
    return stub;
  };

  const handlers: Record<string, Handler> = {
    'auth.test': () =>
      ok({
        url: 'https://fake-workspace.slack.com/',
        team: 'Fake Workspace',
        user: 'loopgate',
        team_id: teamId,
        user_id: botUserId,
        bot_id: botId,
        is_enterprise_install: false,
      }),

    'chat.postMessage': (args) => {
      const channel = str(args.channel);
      if (!channel) return fail('channel_not_found');
      const text = str(args.text) ?? str(args.markdown_text) ?? '';
      if (text === '' && args.blocks === undefined) return fail('no_text');
      if (args.blocks !== undefined) {
        const problems = blockProblems(args.blocks, 'message');
        if (problems.length > 0) return fail('invalid_blocks', { errors: problems });
      }
      if (opts.strictChannels && !channelMembers.get(channel)?.includes(botUserId)) {
        return fail(channelMembers.has(channel) ? 'not_in_channel' : 'channel_not_found');
      }
      const threadTs = str(args.thread_ts);
      if (threadTs && opts.strictMessages && !channelStore(channel).has(threadTs))
        return fail('thread_not_found');
      const message: StoredMessage = {
        channel,
        ts: nextTs(),
        ...(threadTs ? { thread_ts: threadTs } : {}),
        user: botUserId,
        bot_id: botId,
        text,
        ...(Array.isArray(args.blocks) ? { blocks: args.blocks } : {}),
        history: [],
        reactions: [],
        deleted: false,
      };
      channelStore(channel).set(message.ts, message);
      return ok({ channel, ts: message.ts, message: botMessage(message) });
    },

    'chat.update': (args) => {
      const channel = str(args.channel) ?? '';
      const message = channelStore(channel).get(str(args.ts) ?? '');
      if (!message || message.deleted) return fail('message_not_found');
      if (message.user !== botUserId) return fail('cant_update_message');
      if (args.blocks !== undefined) {
        const problems = blockProblems(args.blocks, 'message');
        if (problems.length > 0) return fail('invalid_blocks', { errors: problems });
      }
      message.history.push({ text: message.text, ...(message.blocks ? { blocks: message.blocks } : {}) });
      const text = str(args.text) ?? str(args.markdown_text);
      if (text !== undefined) message.text = text;
      if (Array.isArray(args.blocks)) message.blocks = args.blocks;
      message.edited = { user: botUserId, ts: nextTs() };
      return ok({ channel, ts: message.ts, text: message.text, message: botMessage(message) });
    },

    'chat.delete': (args) => {
      const channel = str(args.channel) ?? '';
      const message = channelStore(channel).get(str(args.ts) ?? '');
      if (!message || message.deleted) return fail('message_not_found');
      if (message.user !== botUserId) return fail('cant_delete_message');
      message.deleted = true;
      return ok({ channel, ts: message.ts });
    },

    'chat.postEphemeral': (args) => {
      const channel = str(args.channel);
      const user = str(args.user);
      if (!channel) return fail('channel_not_found');
      if (!user || !userProfile(user)) return fail('user_not_in_channel');
      if (args.blocks !== undefined) {
        const problems = blockProblems(args.blocks, 'message');
        if (problems.length > 0) return fail('invalid_blocks', { errors: problems });
      }
      const threadTs = str(args.thread_ts);
      const ephemeral: StoredEphemeral = {
        channel,
        user,
        text: str(args.text) ?? '',
        ...(Array.isArray(args.blocks) ? { blocks: args.blocks } : {}),
        ...(threadTs ? { thread_ts: threadTs } : {}),
        message_ts: nextTs(),
      };
      ephemeralStore.push(ephemeral);
      return ok({ message_ts: ephemeral.message_ts });
    },

    'chat.getPermalink': (args) => {
      const channel = str(args.channel) ?? '';
      const ts = str(args.message_ts) ?? '';
      if (!channel || !ts || (opts.strictMessages && !channelStore(channel).has(ts))) {
        return fail('message_not_found');
      }
      const message = channelStore(channel).get(ts);
      const threadTs = message?.thread_ts;
      const query = threadTs ? `?thread_ts=${threadTs}&cid=${channel}` : '';
      return ok({
        channel,
        permalink: `https://fake-workspace.slack.com/archives/${channel}/p${ts.replace('.', '')}${query}`,
      });
    },

    'reactions.add': (args) => {
      const name = str(args.name);
      if (!name) return fail('invalid_name');
      const message = target(str(args.channel) ?? '', str(args.timestamp) ?? '');
      if (!message) return fail('message_not_found');
      const reaction = message.reactions.find((r) => r.name === name);
      if (reaction?.users.includes(botUserId)) return fail('already_reacted');
      if (reaction) reaction.users.push(botUserId);
      else message.reactions.push({ name, users: [botUserId] });
      return ok();
    },

    'reactions.remove': (args) => {
      const name = str(args.name);
      const message = target(str(args.channel) ?? '', str(args.timestamp) ?? '');
      if (!message) return fail('message_not_found');
      const reaction = message.reactions.find((r) => r.name === name);
      if (!reaction?.users.includes(botUserId)) return fail('no_reaction');
      reaction.users = reaction.users.filter((u) => u !== botUserId);
      message.reactions = message.reactions.filter((r) => r.users.length > 0);
      return ok();
    },

    'views.open': (args) => {
      if (!str(args.trigger_id)) return fail('invalid_trigger_id');
      const view = record(args.view);
      const problems = viewProblems(view);
      if (problems.length > 0)
        return fail('invalid_arguments', { response_metadata: { messages: problems } });
      viewSeq += 1;
      const stored: StoredView = {
        id: `V${String(viewSeq).padStart(8, '0')}`,
        hash: `${Date.now()}.${viewSeq}`,
        view: view ?? {},
        trigger_id: str(args.trigger_id),
      };
      views.set(stored.id, stored);
      return ok({
        view: { ...stored.view, id: stored.id, hash: stored.hash, team_id: teamId, app_id: appId },
      });
    },

    'views.update': (args) => {
      const id = str(args.view_id);
      const stored = id
        ? views.get(id)
        : [...views.values()].find((v) => v.view.external_id === args.external_id);
      if (!stored) return fail('not_found');
      if (str(args.hash) && args.hash !== stored.hash) return fail('hash_conflict');
      const view = record(args.view);
      const problems = viewProblems(view);
      if (problems.length > 0)
        return fail('invalid_arguments', { response_metadata: { messages: problems } });
      stored.view = view ?? {};
      stored.hash = `${Date.now()}.${++viewSeq}`;
      return ok({
        view: { ...stored.view, id: stored.id, hash: stored.hash, team_id: teamId, app_id: appId },
      });
    },

    'views.publish': (args) => {
      const user = str(args.user_id);
      if (!user || !userProfile(user)) return fail('user_not_found');
      const view = record(args.view);
      const problems = viewProblems(view);
      if (problems.length > 0)
        return fail('invalid_arguments', { response_metadata: { messages: problems } });
      homes.set(user, view ?? {});
      return ok({ view: { ...view, id: `VHOME${user}`, team_id: teamId, app_id: appId } });
    },

    'users.info': (args) => {
      const profile = userProfile(str(args.user) ?? '');
      if (!profile) return fail('user_not_found');
      return ok({
        user: {
          ...profile,
          team_id: teamId,
          deleted: false,
          profile: { real_name: profile.real_name, display_name: profile.name },
        },
      });
    },

    // One page holds every member: the bot's paging is driven by `response_metadata.next_cursor` ('').
    'conversations.members': (args) => {
      const members = channelMembers.get(str(args.channel) ?? '');
      return members
        ? ok({ members: [...members], response_metadata: { next_cursor: '' } })
        : fail('channel_not_found');
    },

    // Slack answers an email no member has with users_not_found (HTTP 200, ok: false).
    'users.lookupByEmail': (args) => {
      const email = str(args.email)?.toLowerCase();
      if (!email) return fail('invalid_email');
      const found = [...users.entries()].find(([, u]) => u.email?.toLowerCase() === email);
      const profile = found ? userProfile(found[0]) : undefined;
      return profile
        ? ok({ user: { ...profile, team_id: teamId, profile: { email } } })
        : fail('users_not_found');
    },

    'usergroups.users.list': (args) => {
      const members = groups.get(str(args.usergroup) ?? '');
      return members ? ok({ users: [...members] }) : fail('no_such_subteam');
    },

    'assistant.threads.setStatus': (args) => {
      const channel = str(args.channel_id);
      const threadTs = str(args.thread_ts);
      if (!channel || !threadTs) return fail('invalid_arguments');
      statuses.set(`${channel}:${threadTs}`, typeof args.status === 'string' ? args.status : '');
      return ok();
    },

    // Agent pane threads: at most 4 prompts, each with a title and a message; a title needs its text.
    'assistant.threads.setSuggestedPrompts': (args) => {
      if (!str(args.channel_id) || !str(args.thread_ts)) return fail('invalid_arguments');
      const prompts = Array.isArray(args.prompts) ? args.prompts.map(record) : [];
      if (prompts.length === 0 || prompts.length > 4) return fail('invalid_arguments');
      for (const p of prompts) {
        if (
          typeof p?.title !== 'string' ||
          p.title === '' ||
          typeof p.message !== 'string' ||
          p.message === ''
        )
          return fail('invalid_arguments');
      }
      return ok();
    },
    'assistant.threads.setTitle': (args) => {
      if (!str(args.channel_id) || !str(args.thread_ts) || !str(args.title)) return fail('invalid_arguments');
      return ok();
    },

    'conversations.info': (args) => {
      const id = str(args.channel) ?? '';
      const kind = id[0];
      if (kind !== 'C' && kind !== 'G' && kind !== 'D') return fail('channel_not_found');
      const members = channelMembers.get(id);
      if (opts.strictChannels && !members) return fail('channel_not_found');
      return ok({
        channel: {
          id,
          name: kind === 'D' ? undefined : (channelNames.get(id) ?? id.toLowerCase()),
          is_channel: kind === 'C',
          is_group: kind === 'G',
          is_im: kind === 'D',
          is_mpim: false,
          is_private: kind !== 'C',
          is_member: members ? members.includes(botUserId) : true,
          context_team_id: teamId,
        },
      });
    },
  };

  const agentSurfaces = agentSurfaceHandlers(
    { botUserId, botId, nextTs, store: channelStore, ok, fail },
    opts.agentSurfaces ?? {},
  );
  Object.assign(handlers, agentSurfaces.handlers);

  const answerFor = (method: string, args: Args, headers: IncomingHttpHeaders): Answer => {
    const scripted = failures.get(method)?.shift();
    if (scripted?.kind === 'rate_limited') {
      return {
        status: 429,
        headers: { 'retry-after': String(scripted.retryAfterSec ?? 1) },
        body: { ok: false, error: 'ratelimited' },
      };
    }
    if (scripted?.kind === 'error') return fail(scripted.error);
    if (scripted?.kind === 'http') return { status: scripted.status, body: null };

    const bearer = /^Bearer (.+)$/.exec(headers.authorization ?? '')?.[1];
    const presented = bearer ?? str(args.token);
    if (!presented) return fail('not_authed');
    // apps.connections.open takes the app-level token, and only that one.
    if (method === 'apps.connections.open') {
      const socketMode = opts.socketMode;
      return socketMode && presented === socketMode.appToken
        ? ok({ url: socketMode.url() })
        : fail('invalid_auth');
    }
    if (presented !== token) return fail('invalid_auth');
    const verdict = limiter.check(method, str(args.channel) ?? str(args.channel_id));
    if (!verdict.ok) {
      return {
        status: 429,
        headers: { 'retry-after': String(verdict.retryAfterSec) },
        body: { ok: false, error: 'ratelimited' },
      };
    }
    const granted = { 'x-oauth-scopes': scopes.join(',') };
    const needed = METHOD_SCOPES[method]?.(args);
    if (needed !== undefined && !scopes.includes(needed)) {
      const refused = fail('missing_scope', { needed, provided: scopes.join(',') });
      return { ...refused, headers: { ...granted, 'x-accepted-oauth-scopes': needed } };
    }
    const handler = handlers[method];
    const answer = handler ? handler(args) : fail('unknown_method');
    return { ...answer, headers: { ...granted, ...answer.headers } };
  };

  const respond = (res: ServerResponse, answer: Answer) => {
    const status = answer.status ?? 200;
    if (answer.body === null) {
      res.writeHead(status, answer.headers).end();
      return;
    }
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...answer.headers });
    res.end(JSON.stringify(answer.body));
  };

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    const match = /^\/api\/([A-Za-z0-9_.]+)$/.exec(path);
    if (!match?.[1]) {
      res.writeHead(404).end();
      return;
    }
    const method = match[1];
    readBody(req)
      .then((raw) => {
        let args: Args;
        try {
          args = parseArgs(raw, req.headers['content-type'] ?? '');
        } catch {
          respond(res, fail('invalid_form_data'));
          return;
        }
        const answer = answerFor(method, args, req.headers);
        const call: RecordedCall = {
          method,
          args,
          headers: req.headers,
          status: answer.status ?? 200,
          response: answer.body,
          at: Date.now(),
        };
        calls.push(call);
        for (const waiter of [...waiters]) {
          if (waiter.method === method && waiter.predicate(call)) {
            waiters.splice(waiters.indexOf(waiter), 1);
            waiter.resolve(call);
          }
        }
        respond(res, answer);
      })
      .catch(() => {
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    apiUrl: `${url}/api/`,
    token,
    botUserId,
    botId,
    teamId,
    appId,
    calls,
    callsOf: (method) => calls.filter((c) => c.method === method),
    waitForCall: (method, predicate = () => true, timeoutMs = 5_000) => {
      const past = calls.find((c) => c.method === method && predicate(c));
      if (past) return Promise.resolve(past);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(new Error(`no ${method} call matched within ${timeoutMs} ms`));
        }, timeoutMs);
        const waiter = {
          method,
          predicate,
          resolve: (call: RecordedCall) => {
            clearTimeout(timer);
            resolve(call);
          },
        };
        waiters.push(waiter);
      });
    },
    thread: (channel, ts) =>
      visible(channelStore(channel).values()).filter((m) => m.ts === ts || m.thread_ts === ts),
    messages: (channel) => visible(channelStore(channel).values()),
    message: (channel, ts) => {
      const found = channelStore(channel).get(ts);
      return found?.deleted ? undefined : found;
    },
    userMessage: ({ channel, user, text, threadTs }) => {
      const message: StoredMessage = {
        channel,
        ts: nextTs(),
        ...(threadTs ? { thread_ts: threadTs } : {}),
        user,
        text,
        history: [],
        reactions: [],
        deleted: false,
      };
      channelStore(channel).set(message.ts, message);
      return message;
    },
    ephemerals: (channel) => ephemeralStore.filter((e) => channel === undefined || e.channel === channel),
    views,
    home: (userId) => homes.get(userId),
    assistantStatus: (channel, threadTs) => statuses.get(`${channel}:${threadTs}`),
    failNext: (method, n, failure) => {
      const queue = failures.get(method) ?? [];
      for (let i = 0; i < n; i++) queue.push(failure);
      failures.set(method, queue);
    },
    setGroupMembers: (groupId, members) => {
      groups.set(groupId, [...members]);
    },
    setChannelMembers: (channel, members) => {
      channelMembers.set(channel, [...members]);
    },
    setChannelName: (channel, name) => {
      channelNames.set(channel, name);
    },
    setScopes: (granted) => {
      scopes = [...granted];
    },
    setUser: (user) => {
      users.set(user.id, { ...users.get(user.id), ...user });
    },
    surfaces: agentSurfaces.surfaces,
    rateLimited: limiter.refused,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
