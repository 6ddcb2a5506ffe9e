/**
 * Slack's agent surfaces for a person's run: the thread is an agent session whose status follows the
 * run (processing, suspended at an approval, active once answered, closed when it ended otherwise), the
 * model's reply streams into the thread, and each tool call is a step of the stream's timeline.
 *
 * Presentation only (design.md §8): the run's durable state stays in Redis. A stream carries text and
 * steps, never a decision; approvals still go through their cards, which are posted after the stream
 * stopped. A job that dies mid-stream leaves its stream recorded (SurfaceMemory): the next job of the
 * run stops it and marks it interrupted before doing anything else, so no half answer looks complete.
 * The streamed message is the answer only when its text is exactly the accepted answer; otherwise it is
 * marked a draft and the answer is posted as without surfaces.
 *
 * A workspace or token that refuses the methods falls back to the placeholder message: the refusal is
 * remembered per workspace (SurfaceMemory, `refusalTtlMs`) and logged once.
 */
import type { webApi } from '@slack/bolt';
import type { EngineEvent } from '../../loop/engine-events.js';
import type { RunState } from '../../loop/run-state.js';
import type { Logger } from '../../loop/tool-contract.js';
import type { SurfaceMemory } from '../../store/threads/surface-memory.js';
import { slackErrorCode } from '../errors.js';
import { answerFooter } from '../final-answer.js';
import { neutraliseAnswer } from '../neutralise.js';
import type { RunSlackContext } from '../notifier-port.js';
import type { SlackBudget } from '../rate/slack-budget.js';
import { budgetedSurfaceCalls } from './budgeted-calls.js';
import { REFUSAL_CODES, StreamWriter, type StreamWriterOptions } from './stream-writer.js';
import type { SessionStatus, SurfaceCalls } from './surface-calls.js';
import { Timeline } from './timeline.js';

/** The methods over a WebClient (bounded retries, Retry-After honoured: createSlackWebClient). */
export function webSurfaceCalls(client: webApi.WebClient, budget?: SlackBudget): SurfaceCalls {
  const calls = directSurfaceCalls(client);
  return budget ? budgetedSurfaceCalls(calls, budget) : calls;
}

function directSurfaceCalls(client: webApi.WebClient): SurfaceCalls {
  return {
    async start(args) {
      const res = await client.chat.startStream(args as unknown as webApi.ChatStartStreamArguments);
      if (!res.ts) throw new Error('chat.startStream returned no ts');
      return { ts: res.ts };
    },
    async append(args) {
      await client.chat.appendStream(args as unknown as webApi.ChatAppendStreamArguments);
    },
    async stop(args) {
      await client.chat.stopStream(args as unknown as webApi.ChatStopStreamArguments);
    },
    async setStatus(args) {
      await client.agents.sessions.setStatus(args);
    },
    async rename(args) {
      await client.agents.sessions.rename(args);
    },
    async update(args) {
      await client.chat.update({ channel: args.channel, ts: args.ts, markdown_text: args.markdown_text });
    },
  };
}

interface AgentSurfacesOptions {
  calls: SurfaceCalls;
  memory: SurfaceMemory;
  logger: Logger;
  /** How long a workspace's refusal is remembered. Default 1 hour. */
  refusalTtlMs?: number;
  /** Passed to each run's StreamWriter (buffering, rollover). */
  writer?: Partial<
    Pick<
      StreamWriterOptions,
      'bufferChars' | 'minIntervalMs' | 'maxWaitMs' | 'maxMessageChars' | 'maxStreamAgeMs' | 'now'
    >
  >;
}

/** Appended to a stream that is not the answer, so nobody takes it for one. */
export const DRAFT_NOTE = '\n\n_Draft: superseded by the answer below._';
/** What a stream left by a worker that died says once its successor found it. */
const CUT_SHORT_NOTE = '\n\n_Cut short: the run ended before this reply was finished; see below._';
const INTERRUPTED_NOTE = '\n\n_Interrupted: this draft was cut off; the run continues below._';
const INTERRUPTED_TEXT = '_Interrupted: this draft was cut off; the run continues below._';

/** The session title: the question's first line, short. */
export function sessionTitle(question: string): string {
  const line = question.split('\n').find((l) => l.trim() !== '') ?? 'loopgate run';
  const text = line.replace(/<[^>]*>/g, '').trim() || 'loopgate run';
  return text.length <= 60 ? text : `${text.slice(0, 59)}…`;
}

const wordsOf = (text: string) =>
  new Set(
    text
      .replace(/<[^>]*>|\[case:[^\]]*\]/g, ' ')
      .toLowerCase()
      .split(/[^\p{L}\p{N}]+/u)
      .filter((w) => w.length >= 4),
  );

/**
 * Whether a follow-up asks about something else than the question before it: none of its words of four
 * letters or more were in the earlier one. A cheap test, so a thread's title follows a new subject but
 * stays put for "and now?" or "restart it then".
 */
function changesSubject(before: string, now: string): boolean {
  const earlier = wordsOf(before);
  const later = wordsOf(now);
  if (later.size === 0) return false;
  for (const word of later) if (earlier.has(word)) return false;
  return true;
}

/** The worker's entry point: one per process. */
export class AgentSurfaces {
  private readonly refusalTtlMs: number;

  constructor(private readonly opts: AgentSurfacesOptions) {
    this.refusalTtlMs = opts.refusalTtlMs ?? 3_600_000;
  }

  /**
   * The surfaces of a person's run, or null: a sub-agent's run shows in its parent's, and a workspace
   * that refused them recently gets the placeholder.
   */
  async forRun(ctx: RunSlackContext, state: RunState, log: Logger): Promise<RunSurface | null> {
    if (state.agent) return null;
    const team = ctx.teamId ?? '';
    try {
      if ((await this.opts.memory.refusal(team)) !== null) return null;
    } catch (err) {
      log.warn({ err }, 'could not read whether the workspace refused agent surfaces');
      return null;
    }
    return new RunSurface(ctx, state, this.opts, log, (code) => this.refused(team, code, log));
  }

  private async refused(teamId: string, code: string, log: Logger): Promise<void> {
    try {
      if (await this.opts.memory.refuse(teamId, code, this.refusalTtlMs)) {
        log.warn(
          { teamId, slackError: code, forMs: this.refusalTtlMs },
          'Slack refused agent surfaces for this workspace: using the placeholder message instead',
        );
      }
    } catch (err) {
      log.warn({ err, slackError: code }, 'could not remember the refusal of agent surfaces');
    }
  }
}

/** One job's view of a run in Slack's agent surfaces. Never throws: failures are logged. */
export class RunSurface {
  private writer: StreamWriter | null = null;
  private readonly timeline = new Timeline();
  /** The raw text handed to the current stream (the answer check compares it). */
  private raw = '';
  private off = false;
  private sessions = true;
  /** No stream for this job: Tier 2 had no start slot free, so the answer is posted whole. */
  private streamless = false;

  constructor(
    private readonly ctx: RunSlackContext,
    private readonly state: RunState,
    private readonly opts: AgentSurfacesOptions,
    private readonly log: Logger,
    private readonly onRefused: (code: string) => Promise<void>,
  ) {}

  /** False once Slack refused the surfaces: the caller shows progress in the placeholder again. */
  get showing(): boolean {
    return !this.off;
  }

  /**
   * Finishes what a job that died left: each stream it started and never stopped is stopped with a note
   * saying it was cut off (or, when Slack closed it already, its text is replaced by that note).
   */
  async recover(): Promise<void> {
    let open: Awaited<ReturnType<SurfaceMemory['openStreams']>>;
    try {
      open = await this.opts.memory.openStreams(this.ctx.runId);
    } catch (err) {
      this.log.warn({ err }, 'could not read the streams a previous job left open');
      return;
    }
    for (const stream of open) {
      try {
        await this.opts.calls.stop({
          channel: stream.channel,
          ts: stream.ts,
          chunks: [{ type: 'markdown_text', text: INTERRUPTED_NOTE }],
        });
      } catch (err) {
        const code = slackErrorCode(err);
        this.log.info({ ts: stream.ts, slackError: code }, 'stream left by a previous job: replacing it');
        try {
          await this.opts.calls.update({
            channel: stream.channel,
            ts: stream.ts,
            markdown_text: INTERRUPTED_TEXT,
          });
        } catch (updateErr) {
          this.log.warn(
            { ts: stream.ts, slackError: slackErrorCode(updateErr) },
            'could not mark an interrupted stream',
          );
        }
      }
      await this.opts.memory.streamStopped(this.ctx.runId, stream.ts).catch(() => undefined);
    }
  }

  /** The run works (again): session `processing`, titled from the question when it is new. */
  async begin(): Promise<void> {
    await this.status('processing');
    if (this.state.step === 0) await this.renameIfNewSubject();
    await this.decideStreaming();
  }

  /** Streams only when a start slot is free now: waiting for one would delay the answer. */
  private async decideStreaming(): Promise<void> {
    if (this.off || !this.opts.calls.streamRoom) return;
    try {
      this.streamless = !(await this.opts.calls.streamRoom(this.ctx.channelId, this.ctx.threadTs));
    } catch (err) {
      this.log.warn({ err }, 'could not read the stream budget: posting the answer whole');
      this.streamless = true;
    }
    if (this.streamless) this.log.info({}, 'no stream slot free: the answer will be posted whole');
  }

  /** A follow-up on another subject renames the thread's session (the title is set only at creation). */
  private async renameIfNewSubject(): Promise<void> {
    if (this.off || !this.sessions) return;
    const users = this.state.messages.filter((m) => m.role === 'user');
    const before = users.at(-2)?.content;
    if (before === undefined || !changesSubject(before, this.state.question)) return;
    try {
      await this.opts.calls.rename({
        channel_id: this.ctx.channelId,
        thread_ts: this.ctx.threadTs,
        title: sessionTitle(this.state.question),
      });
    } catch (err) {
      this.log.warn({ slackError: slackErrorCode(err) }, 'could not rename the agent session');
    }
  }

  /** A piece of the model's reply text. */
  text(delta: string): void {
    if (this.off || this.streamless) return;
    const writer = this.ensureWriter();
    this.raw += delta;
    writer.text(delta);
    this.check();
  }

  /** An engine event: steps of the timeline. */
  event(event: EngineEvent): void {
    if (this.off || this.streamless) return;
    for (const update of this.timeline.updates(event)) this.ensureWriter().task(update);
    this.check();
  }

  /**
   * The run paused for approvals: the stream stops (with the waiting steps) before any card is posted,
   * and the session is `suspended`. The resume opens a new stream.
   */
  async pause(state: RunState): Promise<void> {
    // The waiting steps came with the approval_needed event; the model's words before the pause stay
    // as they are (they are not an answer).
    // Stopped even when its first batch is still buffered: nothing may stream after the card.
    if (this.writer) await this.stopWriter({});
    await this.status(state.status === 'awaiting_approval' ? 'suspended' : 'processing');
  }

  /**
   * The run ended. Returns the ts of the streamed answer when the stream is the answer (its text is
   * exactly the accepted answer, and it now carries the answer's footer), else null: the caller posts
   * the answer as without surfaces, below a stream now marked a draft.
   */
  async finish(state: RunState): Promise<string | null> {
    let answerTs: string | null = null;
    if (this.off && this.writer?.started) {
      // The stream failed mid-way: what it shows is no answer.
      await this.markDraft(this.writer.messages());
    } else if (this.writer) {
      const answer = (state.answer ?? []).join('\n\n');
      const isAnswer =
        state.status === 'completed' &&
        this.writer.state === 'open' &&
        answer.trim() !== '' &&
        neutraliseAnswer(this.raw.trim()) === neutraliseAnswer(answer.trim());
      if (isAnswer) {
        const footer = answerFooter({
          runId: state.runId,
          stopReason: state.stopReason,
          stopMessage: state.stopMessage,
        });
        const messages = await this.stopWriter({ blocks: footer });
        const complete =
          this.writer.state === 'stopped' &&
          messages.map((m) => m.text).join('') === neutraliseAnswer(this.raw);
        if (complete) answerTs = messages[0]?.ts ?? null;
        else await this.markDraft(messages);
      } else if (state.status !== 'completed') {
        // Stopped (Slack already closed the stream on a stop click), failed or out of budget: nothing more
        // streams, and what was shown says in place that it was cut short.
        await this.addNote(await this.writer.abandon(), CUT_SHORT_NOTE);
      } else {
        // Not the answer (a refused draft, or one the model rewrote): every message it spans says so. The
        // note is added once the stream stopped, so a roll-over can neither split it nor leave a message
        // without it.
        const messages = await this.stopWriter({});
        if (this.raw.trim() !== '') {
          if (this.writer.state === 'stopped') await this.addNote(messages, DRAFT_NOTE);
          else await this.markDraft(messages);
        }
      }
    }
    await this.status(state.status === 'completed' ? 'active' : 'closed');
    return answerTs;
  }

  /**
   * The job hands the run back (shutdown, lost lease): the stream stops with a note that the run goes on
   * in a new message, so it never looks like a finished answer.
   */
  async interrupt(): Promise<void> {
    const writer = this.writer;
    if (writer?.state !== 'open') return;
    await writer.flush();
    await this.stopWriter(
      writer.started || this.raw.trim() !== ''
        ? { chunks: [{ type: 'markdown_text', text: INTERRUPTED_NOTE }] }
        : {},
    );
  }

  /** Each message streamed into keeps its text and gains `note` (cut short, draft). */
  private async addNote(messages: readonly { ts: string; text: string }[], note: string) {
    for (const m of messages) {
      if (m.text.trim() === '') continue;
      await this.opts.calls
        .update({ channel: this.ctx.channelId, ts: m.ts, markdown_text: `${m.text}${note}` })
        .catch((err: unknown) =>
          this.log.warn(
            { ts: m.ts, slackError: slackErrorCode(err), note },
            'could not add a note to a reply',
          ),
        );
    }
  }

  /** Streams that could not take their draft note (the writer failed): their text is replaced by it. */
  private async markDraft(messages: readonly { ts: string }[]) {
    for (const m of messages) {
      await this.opts.calls
        .update({ channel: this.ctx.channelId, ts: m.ts, markdown_text: DRAFT_NOTE.trim() })
        .catch((err: unknown) =>
          this.log.warn({ ts: m.ts, slackError: slackErrorCode(err) }, 'could not mark a draft'),
        );
    }
  }

  private async stopWriter(final: NonNullable<Parameters<StreamWriter['stop']>[0]>) {
    const writer = this.writer;
    if (!writer) return [];
    const messages = writer.started || final.blocks ? await writer.stop(final) : await writer.stop();
    this.check();
    return messages;
  }

  private ensureWriter(): StreamWriter {
    if (this.writer && this.writer.state === 'open') return this.writer;
    const runId = this.ctx.runId;
    this.raw = this.writer ? '' : this.raw;
    this.writer = new StreamWriter({
      ...this.opts.writer,
      calls: this.opts.calls,
      channel: this.ctx.channelId,
      threadTs: this.ctx.threadTs,
      // Slack wants the recipient outside DMs; a DM's stream is for its only other member anyway.
      ...(this.ctx.channelId.startsWith('D')
        ? {}
        : {
            recipient: {
              userId: this.state.requester.userId,
              ...(this.ctx.teamId ? { teamId: this.ctx.teamId } : {}),
            },
          }),
      logger: this.log,
      onStarted: (ts) =>
        this.opts.memory
          .streamStarted(runId, { channel: this.ctx.channelId, ts })
          .catch((err: unknown) => this.log.warn({ err, ts }, 'could not record an open stream')),
      onGaveUp: () => this.check(),
      onStopped: (ts) =>
        this.opts.memory
          .streamStopped(runId, ts)
          .catch((err: unknown) => this.log.warn({ err, ts }, 'could not record a stopped stream')),
    });
    return this.writer;
  }

  /** A writer that Slack refused turns the surfaces off for the run and the workspace. */
  private check() {
    const writer = this.writer;
    if (this.off || !writer) return;
    if (writer.state === 'failed') {
      // Not the workspace's refusal (Slack errors, outages): this run goes on with the placeholder.
      this.off = true;
      this.log.warn({}, 'the Slack stream failed: showing the rest of the run in the placeholder');
    } else if (writer.state === 'refused') {
      this.off = true;
      void this.onRefused(writer.refusal ?? 'refused');
    }
  }

  private async status(status: SessionStatus): Promise<void> {
    if (!this.sessions) return;
    try {
      await this.opts.calls.setStatus({
        channel_id: this.ctx.channelId,
        thread_ts: this.ctx.threadTs,
        status,
        ...(status === 'processing'
          ? { title: sessionTitle(this.state.question), initiator_user_id: this.state.requester.userId }
          : {}),
      });
    } catch (err) {
      const code = slackErrorCode(err);
      if (REFUSAL_CODES.has(code)) {
        this.sessions = false;
        this.off = true;
        await this.onRefused(code);
        return;
      }
      this.log.warn({ slackError: code, status }, 'could not set the agent session status');
    }
  }
}
