import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { RunStateVersionError } from '../../loop/errors.js';
import { RUN_STATE_VERSION, type RunState } from '../../loop/run-state.js';
import type { RunStatus } from '../../loop/run-status.js';
import type { StoreContext } from '../context.js';
import { badReply, decode, parseJsonBuffers, parseJsonList, replyArray, replyCount } from '../decode.js';
import { StoreError } from '../errors.js';
import { STORE_LAYOUT } from '../keys.js';
import {
  type ApprovalRecord,
  approvalFromHash,
  hashFromPairs,
  type SlackContext,
  slackContextSchema,
  type TraceEntry,
} from '../records.js';
import { scriptSource } from '../scripts.js';
import { decodeEvidence, encodeEvidence } from './evidence-codec.js';
import { changingJson, fixedJson, headerFromHash, pauseField } from './header-codec.js';
import type { RunIndex } from './run-index.js';
import { compactionSchema, messageSchema } from './run-state-schema.js';
import { decodeTrace, encodeTraceEntry } from './trace-codec.js';

/** How many messages, evidence and compaction records of a run are in Redis: the base of the next saveStep. */
export interface PersistedCounts {
  messages: number;
  evidence: number;
  /** Absent: none. */
  compactions?: number;
}

/** The counts of `state`'s lists, `compactions` left out while there are none. */
function countsOf(state: RunState): PersistedCounts {
  const compactions = state.compactions?.length ?? 0;
  return {
    messages: state.messages.length,
    evidence: state.evidence.length,
    ...(compactions > 0 ? { compactions } : {}),
  };
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
  /**
   * The approval records of the gated calls pending in `state` (those created so far, in the order
   * of the pending calls), read in the same snapshot: the decisions a resume applies. Empty when no
   * call is pending.
   */
  pauseApprovals: ApprovalRecord[];
  /**
   * The run's recorded trace context (W3C traceparent), read in the same snapshot; null when none is
   * recorded. Absent only where a run is not loaded from Redis (tests' own records): then ask
   * `traceParent`.
   */
  traceParent?: string | null;
}

export interface SaveStepInput {
  runId: string;
  /** Fencing token of the caller's lease. */
  fence: number;
  /** The engine's state after the step; its messages and evidence extend the persisted ones. */
  state: RunState;
  /** What the caller believes is stored (from loadRun, createRun or the previous saveStep). */
  persisted: PersistedCounts;
  /**
   * Trace entries recorded since the previous save, appended in the same script (the trace keeps the
   * newest `traceMaxLength`). A refused save writes none of them.
   */
  trace?: readonly TraceEntry[];
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
const compactionsSchema = z.array(compactionSchema);
/** A list read back as one JSON array: its elements, decoded by the codecs. */
const elementsSchema = z.array(z.unknown());
const cancelSchema = z.strictObject({ by: z.string(), at: z.number() });
const count = z.coerce.number().int().nonnegative();
const time = z.coerce.number();

/**
 * The run store: one header hash plus append-only message, evidence, compaction and trace lists per run
 * (keys.ts),
 * so a step costs what the step produced, never the whole history. Writes go through Lua scripts that
 * check the caller's fencing token (leases.ts).
 */
export class RunStore {
  constructor(
    private readonly ctx: StoreContext,
    private readonly index: RunIndex,
  ) {}

  /**
   * Stores a new run. Idempotent: when the run exists (a redelivered start job) nothing changes,
   * `created` is false and `run` is the stored run (loaded). Also records the run in the channel and
   * requester indexes, unless `index` is false (a sub-agent's run is reached through its parent).
   */
  async createRun(
    state: RunState,
    slack: SlackContext,
    { index = true }: { index?: boolean } = {},
  ): Promise<{ created: boolean; run: LoadedRun }> {
    const context = slackContextSchema.parse(slack);
    if ((state.compactions?.length ?? 0) > 0) {
      throw new TypeError(`run ${state.runId}: a new run has no compactions`);
    }
    const keys = this.ctx.keys.run(state.runId);
    const { messages, evidence } = state;
    const reply = await this.ctx.script(
      'createRun',
      [keys.header, keys.messages, keys.evidence],
      [
        randomUUID(),
        RUN_STATE_VERSION,
        STORE_LAYOUT,
        fixedJson(state),
        changingJson(state),
        JSON.stringify(context),
        state.status,
        state.step,
        state.stopReason ?? '',
        state.createdAt,
        state.updatedAt,
        pauseField(state),
        this.ctx.options.maxRunLifetimeMs,
        messages.length,
        ...messages.map((m) => JSON.stringify(m)),
        ...evidence.map((e) => encodeEvidence(e, messages, 0, state.createdAt)),
      ],
    );
    const created = replyCount('createRun', reply, { runId: state.runId }) === 1;
    if (index) await this.index.add(state.runId, context, state.requester.userId, state.createdAt);
    if (created) {
      const persisted = countsOf(state);
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
          pauseApprovals: [],
        },
      };
    }
    const existing = await this.loadRun(state.runId);
    if (!existing) throw new StoreError('not_found', `run ${state.runId} expired while being created`);
    return { created, run: existing };
  }

  /**
   * Loads a run in one round trip (MULTI: a consistent snapshot of header, messages, evidence,
   * compactions and the approvals of its pending calls) and validates it; null when it does not exist
   * (or has expired).
   * Throws RunStateVersionError for a run stored by another format version, StoreError `corrupt_record`
   * for one stored in another layout or anything else it cannot read.
   */
  async loadRun(runId: string): Promise<LoadedRun | null> {
    const keys = this.ctx.keys.run(runId);
    const replies = await this.ctx.redis
      .multi()
      .hgetall(keys.header)
      .lrangeBuffer(keys.messages, 0, -1)
      .lrangeBuffer(keys.evidence, 0, -1)
      .eval(scriptSource('pauseApprovals'), 1, keys.header, keys.base)
      .lrangeBuffer(keys.compactions, 0, -1)
      .exec();
    const [h, messageList, evidenceList, approvals, compactionList] = (replies ?? []).map(
      ([error, value]) => {
        if (error) throw error;
        return value;
      },
    );
    if (
      !isStringRecord(h) ||
      !isBufferList(messageList) ||
      !isBufferList(evidenceList) ||
      !Array.isArray(approvals) ||
      !isBufferList(compactionList)
    ) {
      throw new StoreError('corrupt_record', `run ${runId}: unexpected reply to the load transaction`, {
        runId,
      });
    }
    if (Object.keys(h).length === 0) return null;
    if (h.v !== String(RUN_STATE_VERSION)) throw new RunStateVersionError(h.v);
    if (h.layout !== String(STORE_LAYOUT)) {
      throw new StoreError(
        'corrupt_record',
        `run ${runId} is stored in layout ${h.layout ?? 1}; this version reads layout ${STORE_LAYOUT} only`,
        { runId },
      );
    }
    return decode(`run ${runId}`, { runId }, () => {
      const header = headerFromHash(runId, h);
      const messages = messagesSchema.parse(parseJsonBuffers(messageList));
      const evidence = decodeEvidence(
        elementsSchema.parse(parseJsonBuffers(evidenceList)),
        messages,
        header.createdAt,
      );
      const compactions = compactionsSchema.parse(parseJsonBuffers(compactionList));
      const storedCompactions = h.compactions ? count.parse(h.compactions) : 0;
      const persisted = {
        messages: count.parse(h.messages),
        evidence: count.parse(h.evidence),
        ...(storedCompactions > 0 ? { compactions: storedCompactions } : {}),
      };
      if (
        persisted.messages !== messages.length ||
        persisted.evidence !== evidence.length ||
        storedCompactions !== compactions.length
      ) {
        throw new StoreError('corrupt_record', `run ${runId}: stored counts differ from its lists`, {
          runId,
        });
      }
      const slack = slackContextSchema.parse({
        ...JSON.parse(h.slack ?? ''),
        ...(h.placeholderTs ? { placeholderTs: h.placeholderTs } : {}),
      });
      const pauseApprovals = approvals
        .filter((a): a is unknown[] => Array.isArray(a) && a.length > 0)
        .map((a) => approvalFromHash(hashFromPairs(a)));
      return {
        state: { ...header, messages, evidence, ...(compactions.length > 0 ? { compactions } : {}) },
        slack,
        persisted,
        fence: count.parse(h.fence),
        cancelRequest: h.cancel ? cancelSchema.parse(JSON.parse(h.cancel)) : null,
        finishedAt: h.finishedAt ? count.parse(h.finishedAt) : null,
        answerTs: h.answerTs ? h.answerTs : null,
        pauseApprovals,
        traceParent: h.traceparent ? h.traceparent : null,
      };
    });
  }

  /**
   * Persists one step in one round trip: appends the messages, evidence and compaction records added since
   * `persisted` and the step's trace entries, and rewrites the changing part of the header. The fixed part (requester,
   * question, limits, createdAt) is written once by createRun and never again: the engine never changes
   * it. When the state is finished, every key of the run gets the retention TTL.
   * Throws StoreError `lease_lost` / `stale_fence` (another worker owns the run now),
   * `count_mismatch` (the caller's view is out of date), `not_found`, `not_append_only`.
   */
  async saveStep({ runId, fence, state, persisted, trace = [] }: SaveStepInput): Promise<SaveStepResult> {
    if (state.runId !== runId) throw new TypeError(`state of run ${state.runId} saved as run ${runId}`);
    const { messages, evidence } = state;
    const compactions = state.compactions ?? [];
    const storedCompactions = persisted.compactions ?? 0;
    if (
      messages.length < persisted.messages ||
      evidence.length < persisted.evidence ||
      compactions.length < storedCompactions
    ) {
      throw new StoreError('not_append_only', `run ${runId}: messages, evidence or compactions shrank`, {
        runId,
        persisted,
        messages: messages.length,
        evidence: evidence.length,
      });
    }
    const keys = this.ctx.keys.run(runId);
    const args: (string | number)[] = [
      fence,
      persisted.messages,
      persisted.evidence,
      randomUUID(),
      changingJson(state),
      state.status,
      state.step,
      state.stopReason ?? '',
      state.updatedAt,
      pauseField(state),
      FINISHED.has(state.status) ? this.ctx.options.retentionMs : 0,
      keys.base,
      this.ctx.options.traceMaxLength,
      messages.length - persisted.messages,
      evidence.length - persisted.evidence,
      storedCompactions,
      compactions.length - storedCompactions,
    ];
    for (let i = persisted.messages; i < messages.length; i++) args.push(JSON.stringify(messages[i]));
    for (let i = persisted.evidence; i < evidence.length; i++) {
      args.push(encodeEvidence(evidence[i]!, messages, persisted.messages, state.createdAt));
    }
    for (let i = storedCompactions; i < compactions.length; i++) args.push(JSON.stringify(compactions[i]));
    for (const entry of trace) args.push(encodeTraceEntry(entry, state.createdAt));
    const reply = await this.ctx.script(
      'saveStep',
      [keys.header, keys.messages, keys.evidence, keys.lease, keys.trace, keys.approvals, keys.compactions],
      args,
    );
    const [messageCount, evidenceCount, cancel, compactionCount] = replyArray('saveStep', reply, {
      runId,
      fence,
      persisted,
    });
    if (
      messageCount !== messages.length ||
      evidenceCount !== evidence.length ||
      compactionCount !== compactions.length
    ) {
      throw badReply('saveStep', reply, {
        runId,
        expected: [messages.length, evidence.length, compactions.length],
      });
    }
    return { persisted: countsOf(state), cancelRequested: cancel === 1 };
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

  /**
   * Records the run's trace context (a W3C traceparent, when tracing is on), once: every later stretch
   * of the run, on any worker, continues that trace. Returns false when the run is gone.
   */
  async setTraceParent(runId: string, traceparent: string): Promise<boolean> {
    return this.updateHeader(runId, ['traceparent', traceparent]);
  }

  /** The run's recorded trace context, or null. */
  async traceParent(runId: string): Promise<string | null> {
    return this.ctx.redis.hget(this.ctx.keys.run(runId).header, 'traceparent');
  }

  /** Records that the run's end was delivered to Slack (a recovered job does not post it twice). */
  async setAnswerTs(runId: string, answerTs: string): Promise<boolean> {
    return this.updateHeader(runId, ['answerTs', answerTs]);
  }

  /**
   * Asks the worker that advances the run to stop at its next step boundary (saveStep reports it), and
   * once that is recorded, announces it (`announceCancel`) so the worker aborts its model request at
   * once. No lease needed: the bot and the cancel job call it. Returns false when the run is gone.
   */
  async requestCancel(runId: string, request: CancelRequest): Promise<boolean> {
    const recorded = await this.updateHeader(runId, ['cancel', JSON.stringify(cancelSchema.parse(request))]);
    if (recorded) await this.announceCancel(runId);
    return recorded;
  }

  /**
   * Publishes a recorded cancel on the `cancels` channel. Only a hint that speeds a worker up: a
   * publish that fails is ignored (workers also poll the `cancel` field), and workers act on it only
   * after reading the field themselves.
   */
  async announceCancel(runId: string): Promise<void> {
    await this.ctx.redis.publish(this.ctx.keys.cancels, runId).catch(() => 0);
  }

  /** Whether a cancel is recorded for the run (the run header's `cancel` field). */
  async cancelRecorded(runId: string): Promise<boolean> {
    return (await this.ctx.redis.hexists(this.ctx.keys.run(runId).header, 'cancel')) === 1;
  }

  /**
   * Appends trace entries (as JSON objects: the compact rows are for the entries saveStep writes with a
   * step), keeping the newest `traceMaxLength`. Returns false when the run is gone.
   */
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

  /** The run's trace, oldest first; empty when the run is gone. */
  async readTrace(runId: string): Promise<TraceEntry[]> {
    const keys = this.ctx.keys.run(runId);
    const [createdAt, list] = await Promise.all([
      this.ctx.redis.hget(keys.header, 'createdAt'),
      this.ctx.redis.lrange(keys.trace, 0, -1),
    ]);
    if (createdAt === null) return [];
    return decode(`trace of run ${runId}`, { runId }, () =>
      decodeTrace(elementsSchema.parse(parseJsonList(list)), time.parse(createdAt)),
    );
  }

  private async updateHeader(runId: string, fields: string[]): Promise<boolean> {
    const reply = await this.ctx.script('updateIfExists', [this.ctx.keys.run(runId).header], fields);
    if (reply === -1) return false;
    if (reply !== 1) throw badReply('updateIfExists', reply, { runId });
    return true;
  }
}
