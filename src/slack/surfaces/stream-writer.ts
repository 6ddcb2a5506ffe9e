/**
 * One run's Slack stream (chat.startStream / appendStream / stopStream): text and task updates are
 * buffered and sent in batches so the Web API's tiers hold (startStream and stopStream Tier 2,
 * appendStream Tier 4), and the stream rolls over to a continuation message before Slack closes it
 * (about five minutes) or the message outgrows its size cap. Nothing handed to the writer is dropped
 * while Slack takes it: a batch leaves the buffer only once Slack accepted it, so a stream Slack closed
 * early (`message_not_in_streaming_state`) or a message that grew too long (`msg_too_long`) sends the
 * same batch again in a new message.
 *
 * Text is neutralised as it arrives (AnswerNeutraliser), across batch and message boundaries: what the
 * messages carry together is exactly the whole text neutralised, as if it had been posted at once.
 *
 * A workspace or token that refuses the methods (`REFUSAL_CODES`) ends the writer at once (`refused`),
 * and repeated other failures end it too (`failed`): the caller then shows the run the old way. The
 * writer never throws.
 */
import type { Logger } from '../../loop/tool-contract.js';
import { slackErrorCode } from '../errors.js';
import { AnswerNeutraliser } from '../neutralise.js';

/** A step of the timeline, as Slack's `task_update` chunk. */
export interface TaskUpdate {
  type: 'task_update';
  id: string;
  title: string;
  status: 'pending' | 'in_progress' | 'complete' | 'error';
  details?: string;
  output?: string;
  sources?: { type: 'url'; url: string; text: string }[];
}

interface MarkdownChunk {
  type: 'markdown_text';
  text: string;
}

type StreamChunk = MarkdownChunk | TaskUpdate;

/** The three Web API methods, as the writer calls them; each rejects with the WebClient's error. */
export interface StreamCalls {
  start(args: {
    channel: string;
    thread_ts: string;
    chunks: StreamChunk[];
    recipient_user_id?: string;
    recipient_team_id?: string;
    task_display_mode: 'timeline' | 'plan';
  }): Promise<{ ts: string }>;
  append(args: { channel: string; ts: string; chunks: StreamChunk[] }): Promise<void>;
  stop(args: { channel: string; ts: string; chunks?: StreamChunk[]; blocks?: unknown[] }): Promise<void>;
}

/** Error codes by which a workspace, plan, token or channel says it does not offer these methods. */
export const REFUSAL_CODES: ReadonlySet<string> = new Set([
  'not_allowed_token_type',
  'method_not_supported_for_channel_type',
  'channel_type_not_supported',
  'missing_scope',
  'unknown_method',
  'not_enabled',
  'feature_not_enabled',
  'team_not_allowed',
  'no_permission',
  'access_denied',
]);

export interface StreamWriterOptions {
  calls: StreamCalls;
  channel: string;
  threadTs: string;
  /** Who the stream is for: Slack requires it outside DMs. */
  recipient?: { userId: string; teamId?: string };
  logger: Logger;
  now?: () => number;
  /** Buffered characters that make a batch due (after `minIntervalMs`). Default 256. */
  bufferChars?: number;
  /** Least time between two calls of one stream. Default 600 ms (Tier 4 allows 100+ a minute). */
  minIntervalMs?: number;
  /** Longest a piece of text waits in the buffer. Default 1,000 ms. */
  maxWaitMs?: number;
  /** Characters of text one message takes before the writer rolls over. Default 10,000 (cap 12,000). */
  maxMessageChars?: number;
  /** Age at which a stream is stopped and continued in a new message. Default 4 minutes (Slack: ~5). */
  maxStreamAgeMs?: number;
  /** Consecutive failures of other kinds after which the writer gives up (`failed`). Default 3. */
  maxFailures?: number;
  /** Called (awaited) once a message's stream started, so a successor can find it after a crash. */
  onStarted?: (ts: string) => Promise<void>;
  /** Called (awaited) once a message's stream was stopped by this writer. */
  onStopped?: (ts: string) => Promise<void>;
  /** Called when the writer gives up (`refused` or `failed`); must not throw. */
  onGaveUp?: (state: 'refused' | 'failed') => void;
}

type WriterState = 'open' | 'stopped' | 'refused' | 'failed';

/** A message the writer streamed into, and the text it carries. */
interface StreamedMessage {
  ts: string;
  text: string;
}

type Item = { kind: 'text'; text: string } | { kind: 'task'; chunk: TaskUpdate };

/** Slack's cap of one `markdown_text` chunk. */
const MAX_CHUNK_CHARS = 12_000;

export class StreamWriter {
  private readonly o: Required<
    Omit<StreamWriterOptions, 'recipient' | 'onStarted' | 'onStopped' | 'onGaveUp' | 'calls' | 'logger'>
  >;
  /** Text waits here until no later text can change how it is neutralised; the queue holds it neutralised. */
  private readonly neutraliser = new AnswerNeutraliser();
  private readonly queue: Item[] = [];
  private current: { ts: string; startedAt: number; chars: number } | null = null;
  private readonly sent: StreamedMessage[] = [];
  private messageCap: number;
  private lastCallAt = Number.NEGATIVE_INFINITY;
  private oldestPendingAt: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  private failures = 0;
  private _state: WriterState = 'open';
  private _refusal: string | null = null;
  /** Slack calls made (the benchmark counts them). */
  calls = 0;

  constructor(private readonly opts: StreamWriterOptions) {
    this.o = {
      channel: opts.channel,
      threadTs: opts.threadTs,
      now: opts.now ?? Date.now,
      bufferChars: opts.bufferChars ?? 256,
      minIntervalMs: opts.minIntervalMs ?? 600,
      maxWaitMs: opts.maxWaitMs ?? 1_000,
      maxMessageChars: Math.min(opts.maxMessageChars ?? 10_000, MAX_CHUNK_CHARS),
      maxStreamAgeMs: opts.maxStreamAgeMs ?? 4 * 60_000,
      maxFailures: opts.maxFailures ?? 3,
    };
    this.messageCap = this.o.maxMessageChars;
  }

  get state(): WriterState {
    return this._state;
  }

  /** The error code Slack refused with, once `refused`. */
  get refusal(): string | null {
    return this._refusal;
  }

  /** Whether a message was streamed into (what a reader of the thread saw). */
  get started(): boolean {
    return this.sent.length > 0;
  }

  /** The messages streamed into so far, with the text each carries (after `stop`: all of it). */
  messages(): readonly StreamedMessage[] {
    return this.sent;
  }

  /** Appends text (Markdown) to the stream. The first words go out at once; later ones in batches. */
  text(delta: string): void {
    if (this._state !== 'open') return;
    const ready = this.neutraliser.push(delta);
    if (ready === '') return;
    this.pushText(ready);
    this.oldestPendingAt ??= this.o.now();
    this.schedule();
  }

  /** Adds or updates a step of the timeline (a later update of the same id replaces a waiting one). */
  task(chunk: TaskUpdate): void {
    if (this._state !== 'open') return;
    const waiting = this.queue.findIndex((i) => i.kind === 'task' && i.chunk.id === chunk.id);
    const last = this.queue.at(-1);
    // Replacing in place keeps the order; only when nothing was queued after it.
    if (waiting >= 0 && waiting === this.queue.length - 1 && last?.kind === 'task') {
      this.queue[waiting] = { kind: 'task', chunk };
    } else {
      this.queue.push({ kind: 'task', chunk });
    }
    this.oldestPendingAt ??= this.o.now();
    this.schedule(true);
  }

  /** Sends what is buffered now (respecting nothing but the order). Resolves when Slack answered. */
  flush(): Promise<void> {
    return this.enqueue(() => this.pump(true));
  }

  /**
   * Sends everything buffered, then stops the stream, adding `blocks` (e.g. the answer's buttons) to its
   * last message. Resolves with the messages streamed into. A writer that never started stays unstarted
   * unless `blocks` or buffered content need a message.
   */
  stop(final: { blocks?: unknown[]; chunks?: StreamChunk[] } = {}): Promise<readonly StreamedMessage[]> {
    return this.enqueue(async () => {
      if (this._state !== 'open') return;
      this.pushText(this.neutraliser.end());
      for (const chunk of final.chunks ?? []) {
        if (chunk.type === 'markdown_text') this.pushText(this.neutraliser.push(chunk.text));
        else this.queue.push({ kind: 'task', chunk });
      }
      this.pushText(this.neutraliser.end());
      await this.pump(true);
      if (this._state !== 'open') return;
      await this.stopCurrent(final.blocks);
      this._state = 'stopped';
    }).then(() => this.sent);
  }

  /**
   * Stops the stream where it is, dropping what is still buffered (the run ended and this text will not
   * be its answer: a stop click, a failure). Resolves with the messages streamed into.
   */
  abandon(): Promise<readonly StreamedMessage[]> {
    return this.enqueue(async () => {
      if (this._state !== 'open') return;
      this.queue.length = 0;
      this._state = 'stopped';
      await this.stopCurrent();
    }).then(() => this.sent);
  }

  private pushText(text: string) {
    if (text === '') return;
    const last = this.queue.at(-1);
    if (last?.kind === 'text') last.text += text;
    else this.queue.push({ kind: 'text', text });
  }

  private enqueue(work: () => Promise<void>): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    this.chain = this.chain.then(work).catch((err: unknown) => {
      this.opts.logger.error({ err }, 'stream writer failed');
      this.giveUp('failed');
    });
    return this.chain;
  }

  private pendingChars(): number {
    let n = 0;
    for (const item of this.queue) if (item.kind === 'text') n += item.text.length;
    return n;
  }

  /** Plans the next batch: at once for the first words, else by size, age and the least interval. */
  private schedule(task = false) {
    if (this.timer || this._state !== 'open') return;
    const now = this.o.now();
    let due: number;
    if (this.current === null && this.sent.length === 0) due = now;
    else if (task || this.pendingChars() >= this.o.bufferChars) due = this.lastCallAt + this.o.minIntervalMs;
    else
      due = Math.max(
        this.lastCallAt + this.o.minIntervalMs,
        (this.oldestPendingAt ?? now) + this.o.maxWaitMs,
      );
    this.timer = setTimeout(
      () => {
        this.timer = null;
        void this.enqueue(() => this.pump(false));
      },
      Math.max(0, due - now),
    );
    this.timer.unref?.();
  }

  /**
   * Builds the next batch from the head of the queue: text (already neutralised) up to the room left in
   * the current message, then task updates, in order.
   */
  private batch(): { chunks: StreamChunk[]; chars: number; consume: () => void } | null {
    const room = this.messageCap - (this.current?.chars ?? 0);
    const chunks: StreamChunk[] = [];
    let chars = 0;
    // Items taken, with the characters taken of a text: text keeps arriving while a call is in flight
    // (appended to the last item), so only what was sent leaves the queue.
    const touched: { item: Item; consumed: number }[] = [];
    for (const item of this.queue) {
      if (item.kind === 'task') {
        chunks.push(item.chunk);
        touched.push({ item, consumed: 0 });
        continue;
      }
      let text = item.text;
      let cut = false;
      const left = Math.min(room - chars, MAX_CHUNK_CHARS);
      if (text.length > left) {
        text = text.slice(0, cutAt(text, left));
        cut = true;
      }
      if (text !== '') {
        chunks.push({ type: 'markdown_text', text });
        chars += text.length;
        touched.push({ item, consumed: text.length });
      }
      if (cut) break;
    }
    if (chunks.length === 0) return null;
    return {
      chunks,
      chars,
      consume: () => {
        for (const { item, consumed } of touched) {
          const at = this.queue.indexOf(item);
          if (at < 0) continue;
          if (item.kind === 'text') item.text = item.text.slice(consumed);
          if (item.kind === 'task' || item.text === '') this.queue.splice(at, 1);
        }
      },
    };
  }

  /** Sends batches until the queue is empty (or, when not `final`, only what is due now). */
  private async pump(final: boolean): Promise<void> {
    let attempts = 0;
    while (this._state === 'open' && this.queue.length > 0) {
      if (++attempts > 50) break;
      const now = this.o.now();
      const current = this.current;
      if (current && (now - current.startedAt >= this.o.maxStreamAgeMs || current.chars >= this.messageCap)) {
        await this.rollOver();
        continue;
      }
      const batch = this.batch();
      if (!batch) {
        if (this.current && this.current.chars >= this.messageCap - 1) await this.rollOver();
        else break;
        continue;
      }
      const ok = await this.send(batch.chunks, batch.chars);
      if (ok) {
        batch.consume();
        if (!final) break;
      } else if (this._state !== 'open') {
        return;
      }
    }
    this.oldestPendingAt = this.queue.length > 0 ? this.o.now() : null;
    if (this.queue.length > 0 && this._state === 'open') this.schedule();
  }

  /** Stops the current message and lets the next batch start a continuation. */
  private async rollOver() {
    this.messageCap = this.o.maxMessageChars;
    await this.stopCurrent();
  }

  /** Stops the message being streamed into, if any, with `blocks` as its last blocks. */
  private async stopCurrent(blocks?: unknown[]) {
    const current = this.current;
    if (!current) return;
    this.current = null;
    try {
      this.calls++;
      await this.opts.calls.stop({ channel: this.o.channel, ts: current.ts, ...(blocks ? { blocks } : {}) });
    } catch (err) {
      // A stream Slack closed already is stopped; the text it carries stays.
      const code = slackErrorCode(err);
      if (code !== 'message_not_in_streaming_state') {
        this.opts.logger.warn({ slackError: code, ts: current.ts }, 'could not stop a Slack stream');
      }
    }
    await this.opts.onStopped?.(current.ts);
  }

  /** One Slack call for a batch; true when Slack took it. */
  private async send(chunks: StreamChunk[], chars: number): Promise<boolean> {
    const text = chunks.map((c) => (c.type === 'markdown_text' ? c.text : '')).join('');
    this.lastCallAt = this.o.now();
    this.calls++;
    try {
      if (this.current) {
        await this.opts.calls.append({ channel: this.o.channel, ts: this.current.ts, chunks });
        this.current.chars += chars;
        const last = this.sent.at(-1);
        if (last) last.text += text;
      } else {
        const { ts } = await this.opts.calls.start({
          channel: this.o.channel,
          thread_ts: this.o.threadTs,
          chunks,
          ...(this.opts.recipient
            ? {
                recipient_user_id: this.opts.recipient.userId,
                ...(this.opts.recipient.teamId ? { recipient_team_id: this.opts.recipient.teamId } : {}),
              }
            : {}),
          task_display_mode: 'timeline',
        });
        this.current = { ts, startedAt: this.o.now(), chars };
        this.sent.push({ ts, text });
        await this.opts.onStarted?.(ts);
      }
      this.failures = 0;
      return true;
    } catch (err) {
      return this.failed(err);
    }
  }

  private async failed(err: unknown): Promise<false> {
    const code = slackErrorCode(err);
    const ts = this.current?.ts;
    if (code === 'message_not_in_streaming_state' && this.current) {
      // Slack closed the stream before we rolled over: the batch goes into a continuation.
      this.opts.logger.info({ ts }, 'Slack closed the stream early; continuing in a new message');
      this.current = null;
      if (ts) await this.opts.onStopped?.(ts);
      return false;
    }
    if (code === 'msg_too_long') {
      // The message is full sooner than counted: the batch goes into a continuation, and continuations
      // are kept smaller from then on.
      this.o.maxMessageChars = Math.max(200, Math.floor(this.o.maxMessageChars / 2));
      await this.rollOver();
      return false;
    }
    if (REFUSAL_CODES.has(code)) {
      this._refusal = code;
      this.giveUp('refused');
      return false;
    }
    this.failures++;
    this.opts.logger.warn({ slackError: code, ts, failures: this.failures }, 'Slack stream call failed');
    if (this.failures >= this.o.maxFailures) this.giveUp('failed');
    return false;
  }

  private giveUp(state: 'refused' | 'failed') {
    if (this._state !== 'open') return;
    this._state = state;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.opts.onGaveUp?.(state);
  }
}

/** Where to cut `text` to at most `max` characters: at the last line break or space when there is one. */
function cutAt(text: string, max: number): number {
  if (text.length <= max) return text.length;
  const window = text.slice(0, max);
  const line = window.lastIndexOf('\n');
  if (line > max / 2) return line + 1;
  const space = window.lastIndexOf(' ');
  return space > max / 2 ? space + 1 : Math.max(1, max);
}
