import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { RunStateVersionError } from '../loop/errors.js';
import { RUN_STATE_VERSION, type RunState, type RunStatus } from '../loop/types.js';
import type { StoreContext } from './context.js';
import { badReply, decode, parseJsonBuffers, parseJsonList, replyArray, replyCount } from './decode.js';
import { StoreError } from './errors.js';
import { type SlackContext, slackContextSchema, type TraceEntry, traceEntrySchema } from './records.js';
import type { RunIndex } from './run-index.js';
import {
  evidenceSchema,
  messageSchema,
  type RunHeaderState,
  runHeaderStateSchema,
} from './run-state-schema.js';

/** How many messages and evidence records of a run are in Redis: the base of the next saveStep. */
export interface PersistedCounts {
  messages: number;
  evidence: number;
}

export interface CancelRequest {
  by: string;
  at: number;
}

/** A run as loaded: the engine's state plus what the store keeps beside it. */
export interface LoadedRun {
  state: RunState;
  slack: SlackContext;
  persisted: PersistedCounts;
  /** Last fencing token issued for this run (0 before any lease). */
  fence: number;
  cancelRequest: CancelRequest | null;
  finishedAt: number | null;
  /** ts of the posted final answer (or end notice): set once the end was delivered to Slack. */
  answerTs: string | null;
}

export interface SaveStepInput {
  runId: string;
  /** Fencing token of the caller's lease. */
  fence: number;
  /** The engine's state after the step; its messages and evidence extend the persisted ones. */
  state: RunState;
  /** What the caller believes is stored (from loadRun, createRun or the previous saveStep). */
  persisted: PersistedCounts;
}

export interface SaveStepResult {
  persisted: PersistedCounts;
  /** Someone asked to cancel the run: stop at this step boundary. */
  cancelRequested: boolean;
}

const isStringRecord = (value: unknown): value is Record<string, string> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isBufferList = (value: unknown): value is Buffer[] =>
  Array.isArray(value) && value.every((e) => Buffer.isBuffer(e));

const FINISHED: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'stopped', 'cancelled']);
const messagesSchema = z.array(messageSchema);
const evidenceListSchema = z.array(evidenceSchema);
const traceSchema = z.array(traceEntrySchema);
const cancelSchema = z.strictObject({ by: z.string(), at: z.number() });
const count = z.coerce.number().int().nonnegative();

/**
 * The run store: one header hash plus append-only message and evidence lists per run (keys.ts), so a
 * step costs what the step produced, never the whole history. Writes go through Lua scripts that check
 * the caller's fencing token (leases.ts).
 */
export class RunStore {
  constructor(
    private readonly ctx: StoreContext,
    private readonly index: RunIndex,
  ) {}

  /**
   * Stores a new run. Idempotent: when the run exists (a redelivered start job) nothing changes,
   * `created` is false and `run` is the stored run (loaded). Also records the run in the channel and
   * requester indexes.
   */
  async createRun(state: RunState, slack: SlackContext): Promise<{ created: boolean; run: LoadedRun }> {
    const context = slackContextSchema.parse(slack);
    const keys = this.ctx.keys.run(state.runId);
    const { messages, evidence, ...header } = state;
    const reply = await this.ctx.script(
      'createRun',
      [keys.header, keys.messages, keys.evidence],
      [
        randomUUID(),
        RUN_STATE_VERSION,
        JSON.stringify(header),
        JSON.stringify(context),
        state.status,
        state.step,
        state.stopReason ?? '',
        state.createdAt,
        state.updatedAt,
        this.ctx.options.maxRunLifetimeMs,
        messages.length,
        ...messages.map((m) => JSON.stringify(m)),
        ...evidence.map((e) => JSON.stringify(e)),
      ],
    );
    const created = replyCount('createRun', reply, { runId: state.runId }) === 1;
    await this.index.add(state.runId, context, state.requester.userId, state.createdAt);
    if (created) {
      const persisted = { messages: messages.length, evidence: evidence.length };
      return {
        created,
        run: {
          state,
          slack: context,
          persisted,
          fence: 0,
          cancelRequest: null,
          finishedAt: null,
          answerTs: null,
        },
      };
    }
    const existing = await this.loadRun(state.runId);
    if (!existing) throw new StoreError('not_found', `run ${state.runId} expired while being created`);
    return { created, run: existing };
  }

  /**
   * Loads a run in one round trip (MULTI: a consistent snapshot of header, messages and evidence) and
   * validates it; null when it does not exist (or has expired). Throws RunStateVersionError for a run
   * stored by another format version, StoreError `corrupt_record` for anything else it cannot read.
   */
  async loadRun(runId: string): Promise<LoadedRun | null> {
    const keys = this.ctx.keys.run(runId);
    const replies = await this.ctx.redis
      .multi()
      .hgetall(keys.header)
      .lrangeBuffer(keys.messages, 0, -1)
      .lrangeBuffer(keys.evidence, 0, -1)
      .exec();
    const [h, messageList, evidenceList] = (replies ?? []).map(([error, value]) => {
      if (error) throw error;
      return value;
    });
    if (!isStringRecord(h) || !isBufferList(messageList) || !isBufferList(evidenceList)) {
      throw new StoreError('corrupt_record', `run ${runId}: unexpected reply to the load transaction`, {
        runId,
      });
    }
    if (Object.keys(h).length === 0) return null;
    if (h.v !== String(RUN_STATE_VERSION)) throw new RunStateVersionError(h.v);
    return decode(`run ${runId}`, { runId }, () => {
      const header: RunHeaderState = runHeaderStateSchema.parse(JSON.parse(h.state ?? ''));
      const messages = messagesSchema.parse(parseJsonBuffers(messageList));
      const evidence = evidenceListSchema.parse(parseJsonBuffers(evidenceList));
      const persisted = { messages: count.parse(h.messages), evidence: count.parse(h.evidence) };
      if (persisted.messages !== messages.length || persisted.evidence !== evidence.length) {
        throw new StoreError('corrupt_record', `run ${runId}: stored counts differ from its lists`, {
          runId,
        });
      }
      const slack = slackContextSchema.parse({
        ...JSON.parse(h.slack ?? ''),
        ...(h.placeholderTs ? { placeholderTs: h.placeholderTs } : {}),
      });
      return {
        state: { ...header, messages, evidence },
        slack,
        persisted,
        fence: count.parse(h.fence),
        cancelRequest: h.cancel ? cancelSchema.parse(JSON.parse(h.cancel)) : null,
        finishedAt: h.finishedAt ? count.parse(h.finishedAt) : null,
        answerTs: h.answerTs ? h.answerTs : null,
      };
    });
  }

  /**
   * Persists one step in one round trip: appends the messages and evidence added since `persisted`
   * and rewrites the header. When the state is finished, every key of the run gets the retention TTL.
   * Throws StoreError `lease_lost` / `stale_fence` (another worker owns the run now),
   * `count_mismatch` (the caller's view is out of date), `not_found`, `not_append_only`.
   */
  async saveStep({ runId, fence, state, persisted }: SaveStepInput): Promise<SaveStepResult> {
    if (state.runId !== runId) throw new TypeError(`state of run ${state.runId} saved as run ${runId}`);
    const { messages, evidence, ...header } = state;
    if (messages.length < persisted.messages || evidence.length < persisted.evidence) {
      throw new StoreError('not_append_only', `run ${runId}: messages or evidence shrank`, {
        runId,
        persisted,
        messages: messages.length,
        evidence: evidence.length,
      });
    }
    const keys = this.ctx.keys.run(runId);
    const newMessages = messages.slice(persisted.messages);
    const newEvidence = evidence.slice(persisted.evidence);
    const args: (string | number)[] = [
      fence,
      persisted.messages,
      persisted.evidence,
      randomUUID(),
      JSON.stringify(header),
      state.status,
      state.step,
      state.stopReason ?? '',
      state.updatedAt,
      FINISHED.has(state.status) ? this.ctx.options.retentionMs : 0,
      keys.base,
      newMessages.length,
    ];
    for (const m of newMessages) args.push(JSON.stringify(m));
    for (const e of newEvidence) args.push(JSON.stringify(e));
    const reply = await this.ctx.script(
      'saveStep',
      [keys.header, keys.messages, keys.evidence, keys.lease, keys.trace, keys.approvals],
      args,
    );
    const [messageCount, evidenceCount, cancel] = replyArray('saveStep', reply, { runId, fence, persisted });
    if (messageCount !== messages.length || evidenceCount !== evidence.length) {
      throw badReply('saveStep', reply, { runId, expected: [messages.length, evidence.length] });
    }
    return {
      persisted: { messages: messages.length, evidence: evidence.length },
      cancelRequested: cancel === 1,
    };
  }

  /** Gives every key of a run the TTL `ttlMs` (default: the retention), e.g. for a run ended while paused. */
  async expireRun(runId: string, ttlMs = this.ctx.options.retentionMs): Promise<void> {
    const keys = this.ctx.keys.run(runId);
    const reply = await this.ctx.script(
      'expireRun',
      [keys.header, keys.messages, keys.evidence, keys.lease, keys.trace, keys.approvals],
      [ttlMs, keys.base],
    );
    replyCount('expireRun', reply, { runId });
  }

  /** Records the bot's placeholder message of the run. Returns false when the run is gone. */
  async setPlaceholder(runId: string, placeholderTs: string): Promise<boolean> {
    return this.updateHeader(runId, ['placeholderTs', placeholderTs]);
  }

  /** Records that the run's end was delivered to Slack (a recovered job does not post it twice). */
  async setAnswerTs(runId: string, answerTs: string): Promise<boolean> {
    return this.updateHeader(runId, ['answerTs', answerTs]);
  }

  /**
   * Asks the worker that advances the run to stop at its next step boundary (saveStep reports it).
   * No lease needed: the bot and the cancel job call it. Returns false when the run is gone.
   */
  async requestCancel(runId: string, request: CancelRequest): Promise<boolean> {
    return this.updateHeader(runId, ['cancel', JSON.stringify(cancelSchema.parse(request))]);
  }

  /** Appends trace entries, keeping the newest `traceMaxLength`. Returns false when the run is gone. */
  async appendTrace(runId: string, entries: readonly TraceEntry[]): Promise<boolean> {
    if (entries.length === 0) return true;
    const keys = this.ctx.keys.run(runId);
    const reply = await this.ctx.script(
      'appendTrace',
      [keys.header, keys.trace],
      [this.ctx.options.traceMaxLength, ...entries.map((e) => JSON.stringify(e))],
    );
    if (reply === -1) return false;
    replyCount('appendTrace', reply, { runId });
    return true;
  }

  async readTrace(runId: string): Promise<TraceEntry[]> {
    const list = await this.ctx.redis.lrange(this.ctx.keys.run(runId).trace, 0, -1);
    return decode(`trace of run ${runId}`, { runId }, () => traceSchema.parse(parseJsonList(list)));
  }

  private async updateHeader(runId: string, fields: string[]): Promise<boolean> {
    const reply = await this.ctx.script('updateIfExists', [this.ctx.keys.run(runId).header], fields);
    if (reply === -1) return false;
    if (reply !== 1) throw badReply('updateIfExists', reply, { runId });
    return true;
  }
}
