/**
 * The agent-surface methods of the fake Slack Web API (hooked into slack-api-server.ts): streams
 * (`chat.startStream` / `appendStream` / `stopStream`) and agent sessions (`agents.sessions.setStatus` /
 * `rename`), checked as Slack documents them:
 *
 * - startStream needs `channel` and `thread_ts`; outside DMs (`D…`) also `recipient_user_id` and
 *   `recipient_team_id`. Every call takes `markdown_text` or `chunks` (stopStream may take neither).
 * - Chunks: `markdown_text` (text, at most 12,000 characters), `task_update` (id, title, status pending,
 *   in_progress, complete or error; optional details, output, sources of `{type: 'url', url, text}`),
 *   `plan_update` (title); anything else is `invalid_chunks`. `task_display_mode` is timeline or plan.
 * - A stream accepts appends until it is stopped or `streamLifetimeMs` after its start (Slack closes it
 *   after about five minutes): later calls fail with `message_not_in_streaming_state`. A message whose
 *   text would pass `maxMessageChars` fails with `msg_too_long` (and keeps what it had).
 * - setStatus needs `channel_id`, `thread_ts` and a status among processing, active, suspended, closed;
 *   a title at most 200 characters. Each session's status history is recorded.
 * - With `refuse`, every one of these methods fails with that error (a workspace without the feature).
 */
import { blockProblems, type StoredMessage } from './slack-api-server.js';

export interface AgentSurfaceOptions {
  /** Answer every agent-surface method with this error (e.g. `not_allowed_token_type`). */
  refuse?: string;
  /** How long a stream takes appends after its start. Default 300,000 ms (Slack: about 5 minutes). */
  streamLifetimeMs?: number;
  /** Characters of Markdown one streamed message holds. Default 12,000. */
  maxMessageChars?: number;
}

export interface FakeStream {
  channel: string;
  ts: string;
  threadTs: string;
  startedAt: number;
  /** `stopped` by stopStream; `expired` once an append came after the lifetime. */
  state: 'streaming' | 'stopped' | 'expired';
  /** Every chunk accepted, in order (markdown_text given as a field counts as a markdown chunk). */
  chunks: Record<string, unknown>[];
  recipient?: { user: string; team: string };
  taskDisplayMode?: string;
}

export interface SessionEntry {
  status: string;
  title?: string;
  initiator?: string;
  at: number;
}

export interface FakeAgentSurfaces {
  /** Streams by message ts, in start order. */
  streams: Map<string, FakeStream>;
  /** Streams of one thread, in start order. */
  streamsIn(channel: string, threadTs: string): FakeStream[];
  /** The concatenated Markdown a stream carries. */
  textOf(stream: FakeStream): string;
  /** Every setStatus accepted for a session (`channel:thread_ts`), oldest first; renames too. */
  sessions: Map<string, SessionEntry[]>;
  statusHistory(channel: string, threadTs: string): string[];
  options: AgentSurfaceOptions;
}

type Args = Record<string, unknown>;
type Answer = { status?: number; body: Args | null };

export interface SurfaceHost {
  botUserId: string;
  botId: string;
  nextTs(): string;
  store(channel: string): Map<string, StoredMessage>;
  ok(body?: Args): Answer;
  fail(error: string, extra?: Args): Answer;
}

const STATUSES = new Set(['processing', 'active', 'suspended', 'closed']);
const TASK_STATUSES = new Set(['pending', 'in_progress', 'complete', 'error']);
const MAX_MARKDOWN = 12_000;

const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
const isRecord = (v: unknown): v is Args => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Why Slack would refuse these chunks; null when they are valid. */
export function chunkProblem(chunks: unknown): string | null {
  if (!Array.isArray(chunks) || chunks.length === 0) return 'chunks must be a non-empty array';
  for (const [i, c] of chunks.entries()) {
    if (!isRecord(c)) return `chunks[${i}] is not an object`;
    switch (c.type) {
      case 'markdown_text':
        if (typeof c.text !== 'string') return `chunks[${i}].text must be a string`;
        if (c.text.length > MAX_MARKDOWN) return `chunks[${i}].text is longer than ${MAX_MARKDOWN}`;
        break;
      case 'task_update': {
        if (!str(c.id) || !str(c.title)) return `chunks[${i}] needs id and title`;
        if (!TASK_STATUSES.has(String(c.status))) return `chunks[${i}].status is invalid`;
        for (const f of ['details', 'output']) {
          if (c[f] !== undefined && typeof c[f] !== 'string') return `chunks[${i}].${f} must be a string`;
        }
        if (c.sources !== undefined) {
          if (!Array.isArray(c.sources)) return `chunks[${i}].sources must be an array`;
          for (const s of c.sources) {
            if (!isRecord(s) || s.type !== 'url' || !str(s.url) || !str(s.text)) {
              return `chunks[${i}].sources: each needs type url, url and text`;
            }
          }
        }
        break;
      }
      case 'plan_update':
        if (!str(c.title)) return `chunks[${i}] needs a title`;
        break;
      default:
        return `chunks[${i}].type ${String(c.type)} is unknown`;
    }
  }
  return null;
}

/** The handlers and the recorder; `host` gives the fake server's message store. */
export function agentSurfaceHandlers(
  host: SurfaceHost,
  options: AgentSurfaceOptions = {},
): { handlers: Record<string, (args: Args) => Answer>; surfaces: FakeAgentSurfaces } {
  const streams = new Map<string, FakeStream>();
  const sessions = new Map<string, SessionEntry[]>();
  const lifetime = () => options.streamLifetimeMs ?? 300_000;
  const maxChars = () => options.maxMessageChars ?? MAX_MARKDOWN;
  const textOf = (s: FakeStream) =>
    s.chunks
      .filter((c) => c.type === 'markdown_text')
      .map((c) => String(c.text))
      .join('');

  /** The chunks a call brings, or why Slack would refuse them. */
  const incoming = (args: Args, required: boolean): Args[] | Answer => {
    const chunks: Args[] = [];
    if (args.markdown_text !== undefined) {
      if (typeof args.markdown_text !== 'string') return host.fail('invalid_arguments');
      if (args.markdown_text.length > MAX_MARKDOWN) return host.fail('msg_too_long');
      chunks.push({ type: 'markdown_text', text: args.markdown_text });
    }
    if (args.chunks !== undefined) {
      const problem = chunkProblem(args.chunks);
      if (problem) return host.fail('invalid_chunks', { errors: [problem] });
      chunks.push(...(args.chunks as Args[]));
    }
    if (required && chunks.length === 0)
      return host.fail('invalid_arguments', { errors: ['markdown_text or chunks is required'] });
    return chunks;
  };

  /** The live stream a call names, or Slack's error. */
  const live = (args: Args): FakeStream | Answer => {
    const channel = str(args.channel);
    const ts = str(args.ts);
    if (!channel || !ts) return host.fail('invalid_arguments');
    const stream = streams.get(ts);
    if (!stream || stream.channel !== channel) return host.fail('message_not_found');
    if (stream.state === 'streaming' && Date.now() - stream.startedAt >= lifetime()) stream.state = 'expired';
    if (stream.state !== 'streaming') return host.fail('message_not_in_streaming_state');
    return stream;
  };

  const render = (stream: FakeStream) => {
    const message = host.store(stream.channel).get(stream.ts);
    if (message) message.text = textOf(stream);
  };

  const take = (stream: FakeStream, chunks: Args[]): Answer | null => {
    const added = chunks
      .filter((c) => c.type === 'markdown_text')
      .reduce((n, c) => n + String(c.text).length, 0);
    if (textOf(stream).length + added > maxChars()) return host.fail('msg_too_long');
    stream.chunks.push(...chunks);
    render(stream);
    return null;
  };

  const refused = (handler: (args: Args) => Answer) => (args: Args) =>
    options.refuse ? host.fail(options.refuse) : handler(args);

  const handlers: Record<string, (args: Args) => Answer> = {
    'chat.startStream': refused((args) => {
      const channel = str(args.channel);
      if (!channel) return host.fail('channel_not_found');
      const threadTs = str(args.thread_ts);
      if (!threadTs) return host.fail('invalid_arguments', { errors: ['thread_ts is required'] });
      const user = str(args.recipient_user_id);
      const team = str(args.recipient_team_id);
      if (!channel.startsWith('D') && (!user || !team)) {
        return host.fail('invalid_arguments', {
          errors: ['recipient_user_id and recipient_team_id are required outside DMs'],
        });
      }
      const mode = args.task_display_mode;
      if (mode !== undefined && mode !== 'timeline' && mode !== 'plan') return host.fail('invalid_arguments');
      const chunks = incoming(args, true);
      if (!Array.isArray(chunks)) return chunks;
      const ts = host.nextTs();
      const stream: FakeStream = {
        channel,
        ts,
        threadTs,
        startedAt: Date.now(),
        state: 'streaming',
        chunks: [],
        ...(user && team ? { recipient: { user, team } } : {}),
        ...(typeof mode === 'string' ? { taskDisplayMode: mode } : {}),
      };
      const tooLong = take(stream, chunks);
      if (tooLong) return tooLong;
      streams.set(ts, stream);
      host.store(channel).set(ts, {
        channel,
        ts,
        thread_ts: threadTs,
        user: host.botUserId,
        bot_id: host.botId,
        text: textOf(stream),
        history: [],
        reactions: [],
        deleted: false,
      });
      return host.ok({ channel, ts });
    }),

    'chat.appendStream': refused((args) => {
      const stream = live(args);
      if (!('chunks' in stream && 'state' in stream)) return stream as Answer;
      const chunks = incoming(args, true);
      if (!Array.isArray(chunks)) return chunks;
      return take(stream, chunks) ?? host.ok({ channel: stream.channel, ts: stream.ts });
    }),

    'chat.stopStream': refused((args) => {
      const stream = live(args);
      if (!('chunks' in stream && 'state' in stream)) return stream as Answer;
      const chunks = incoming(args, false);
      if (!Array.isArray(chunks)) return chunks;
      if (args.blocks !== undefined) {
        const problems = blockProblems(args.blocks, 'message');
        if (problems.length > 0) return host.fail('invalid_blocks', { errors: problems });
      }
      const tooLong = take(stream, chunks);
      if (tooLong) return tooLong;
      stream.state = 'stopped';
      const message = host.store(stream.channel).get(stream.ts);
      if (message && Array.isArray(args.blocks)) message.blocks = args.blocks;
      return host.ok({ channel: stream.channel, ts: stream.ts });
    }),

    'agents.sessions.setStatus': refused((args) => {
      const channel = str(args.channel_id);
      const threadTs = str(args.thread_ts);
      if (!channel) return host.fail('channel_not_found');
      if (!threadTs) return host.fail('invalid_arguments', { errors: ['thread_ts is required'] });
      if (!STATUSES.has(String(args.status)))
        return host.fail('invalid_arguments', { errors: ['bad status'] });
      const title = args.title;
      if (title !== undefined && (typeof title !== 'string' || title.length > 200))
        return host.fail('invalid_arguments');
      const key = `${channel}:${threadTs}`;
      const history = sessions.get(key) ?? [];
      history.push({
        status: String(args.status),
        ...(typeof title === 'string' && history.length === 0 ? { title } : {}),
        ...(history.length === 0 && str(args.initiator_user_id)
          ? { initiator: str(args.initiator_user_id) }
          : {}),
        at: Date.now(),
      });
      sessions.set(key, history);
      return host.ok();
    }),

    'agents.sessions.rename': refused((args) => {
      const channel = str(args.channel_id);
      const title = str(args.title);
      if (!channel) return host.fail('channel_not_found');
      if (!title || title.length > 200) return host.fail('invalid_arguments');
      const key = `${channel}:${str(args.thread_ts) ?? ''}`;
      const history = sessions.get(key);
      if (!history) return host.fail('session_not_found');
      const last = history.at(-1);
      if (last) history.push({ status: last.status, title, at: Date.now() });
      return host.ok();
    }),
  };

  return {
    handlers,
    surfaces: {
      streams,
      streamsIn: (channel, threadTs) =>
        [...streams.values()].filter((s) => s.channel === channel && s.threadTs === threadTs),
      textOf,
      sessions,
      statusHistory: (channel, threadTs) =>
        (sessions.get(`${channel}:${threadTs}`) ?? []).map((e) => e.status),
      options,
    },
  };
}
