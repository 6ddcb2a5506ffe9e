/**
 * Contracts of the loopgate engine. Everything the engine touches outside itself arrives through the
 * ports declared here (model, tools, clock, event sink, checkpoint, ledger); the engine imports neither
 * Slack, BullMQ, Redis nor the OpenAI SDK.
 */
import type { z } from 'zod';

// ---------------------------------------------------------------------------------------------------
// Messages: the conversation the model sees. Plain JSON, close to Chat Completions but SDK-free.
// ---------------------------------------------------------------------------------------------------

export interface ToolCall {
  /** Id chosen by the model; unique within the run. */
  id: string;
  name: string;
  /** Raw JSON text exactly as the model produced it (may be malformed). */
  arguments: string;
}

export type Message =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string; name?: string }
  | { role: 'assistant'; content: string | null; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string };

// ---------------------------------------------------------------------------------------------------
// Tool results
// ---------------------------------------------------------------------------------------------------

/** Stable codes of failed tool results; the model reads them, tests and dashboards rely on them. */
export type ToolErrorCode =
  | 'unknown_tool'
  | 'invalid_json'
  | 'invalid_arguments'
  | 'tool_failed'
  | 'timeout'
  | 'rejected'
  | 'rejected_before'
  | 'expired'
  | 'cancelled'
  | 'outcome_unknown'
  | 'approval_mismatch'
  | 'too_many_calls'
  | 'run_stopped'
  | 'delegation_refused'
  | 'subagent_failed'
  /** The call was in shadow mode: shown to people, never executed. */
  | 'shadow_mode'
  /** The tool's plan could not be computed (it threw, timed out or was too long): nothing ran. */
  | 'plan_failed'
  /** The plan changed since approval (recorded in the ledger; the call is asked again, or not rerun). */
  | 'plan_changed';

/**
 * An attempt of a tool call that failed transiently and was made again: its error and how long the engine
 * waited before the next attempt. Listed on the call's result so the model and the trace see each retry.
 */
export interface RetriedAttempt {
  /** 1-based number of the failed attempt. */
  attempt: number;
  code: string;
  message: string;
  /** Milliseconds waited before the next attempt. */
  delayMs: number;
}

/** What a tool call produced, as the model will read it (serialised into the `tool` message). */
export type ToolResult =
  | {
      ok: true;
      data: unknown;
      truncated?: TruncationInfo;
      verification?: VerifyResult;
      /** The earlier attempts that failed transiently, when the call needed more than one. */
      attempts?: RetriedAttempt[];
      /** A person edited the model's arguments before approving; these ran. */
      edited?: EditedArguments;
    }
  | {
      ok: false;
      error: {
        code: ToolErrorCode | (string & {});
        message: string;
        /** True when the failure was transient (a timeout, a dropped connection, 429/502/503/504). */
        transient?: boolean;
      };
      attempts?: RetriedAttempt[];
      edited?: EditedArguments;
    };

/** What the model reads when an approver changed its call's arguments before it ran. */
export interface EditedArguments {
  /** Slack user id of the editor. */
  by?: string;
  note: string;
  args: unknown;
}

export interface TruncationInfo {
  totalChars: number;
  keptHeadChars: number;
  keptTailChars: number;
  /** Lines of the whole text and how many of them the model is shown from its start and its end. */
  lines?: { total: number; head: number; tail: number };
  /** Handle of the whole result kept with the run, for `read_result`; absent when it was not kept. */
  handle?: string;
}

// ---------------------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------------------

export type ToolEffect = 'read' | 'write' | 'notify';

export interface Requester {
  /** Slack user id (or a local id in tests and the demo). */
  userId: string;
  teamId?: string;
  /** IANA time zone, when known (Slack users.info tz). */
  timeZone?: string;
}

/** Structural subset of pino's logger, so the engine needs no logging library. */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

export interface ToolContext {
  /** Aborted when the tool's timeout or the run's deadline passes. Tools must honour it. */
  signal: AbortSignal;
  /** `runId:toolCallId`: the same for every attempt of one call, so a receiver can dedupe. */
  idempotencyKey: string;
  runId: string;
  toolCallId: string;
  /** The run's Slack thread (`channel:thread_ts`), when it has one. */
  threadId?: string;
  requester: Requester;
  logger: Logger;
}

/** Result of a tool's post-write check; kept as evidence and shown to the model. */
export interface VerifyResult {
  ok: boolean;
  summary: string;
}

/**
 * A tool is a plain object. `execute` may throw: the engine turns a throw into a `tool_failed` result.
 * `preview` and `verify` must be read-only.
 */
export interface Tool<P extends z.ZodType = z.ZodType, R = unknown> {
  name: string;
  /** Written for the model: what it does, when to use it, what it returns. */
  description: string;
  parameters: P;
  effect: ToolEffect;
  execute(args: z.output<P>, ctx: ToolContext): Promise<R>;
  /** Human-readable text (Markdown) of what would happen, shown on the approval card. */
  preview?(args: z.output<P>, ctx: ToolContext): Promise<string>;
  /** Read-only check after a successful write/notify, e.g. a health check after a restart. */
  verify?(args: z.output<P>, result: R, ctx: ToolContext): Promise<VerifyResult>;
  /**
   * Read-only: what executing the call would change now (a dry-run, a diff). Shown on the approval card
   * and computed again immediately before execution; the call runs only when both are the same plan
   * (src/loop/plan.ts). A throw or timeout blocks execution.
   */
  plan?(args: z.output<P>, ctx: ToolContext): Promise<string>;
  /**
   * Whether the plan current at execution is the same plan as the approved one (e.g. ignoring a
   * timestamp line). Default: the exact same text. Must be pure.
   */
  samePlan?(approved: string, current: string): boolean;
  /** Per-call timeout; default from the engine limits. */
  timeoutMs?: number;
  /**
   * True when running the call twice has the effect of running it once (same idempotency key): an
   * approved call may then be retried after a transient failure or a crash.
   */
  idempotent?: boolean;
  /**
   * Automatic retries on transient failures (see src/loop/retry.ts); read tools and idempotent tools
   * default to DEFAULT_RETRY. Never applied to a non-idempotent write or notify call.
   */
  retry?: RetryPolicy;
  /**
   * Set on a sub-agent's tool (`ask_<agent>`): a call is not executed but handed to a child run of that
   * agent, and its result is the child's end (src/loop/delegate.ts). `execute` is never called.
   */
  delegate?: { agent: string };
}

/** How a call that failed transiently is tried again: exponential backoff with full jitter. */
export interface RetryPolicy {
  /** Attempts in all, the first included (1 = no retry). */
  attempts: number;
  /** Upper bound of the first wait; doubles with each retry. */
  initialDelayMs: number;
  /** Longest wait between two attempts, also the cap of a server's Retry-After. */
  maxDelayMs: number;
}

// biome-ignore lint/suspicious/noExplicitAny: a registry holds tools of every parameter type.
export type AnyTool = Tool<z.ZodType, any>;

/** The function schema sent to the model. */
export interface ToolSchema {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------------
// Ports
// ---------------------------------------------------------------------------------------------------

export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
  /** Of `inputTokens`, those the server read from its prompt cache (`prompt_tokens_details.cached_tokens`). */
  cachedInputTokens?: number;
}

export interface ModelRequest {
  messages: readonly Message[];
  tools: readonly ToolSchema[];
  signal: AbortSignal;
  /** Upper bound for the reply's tokens, derived from the remaining token budget. */
  maxOutputTokens?: number;
  /**
   * Asks for the reply as a stream: each piece of its text is handed here as it arrives, in order, and the
   * promise still resolves with the complete reply (the pieces concatenated are its `content`). Absent:
   * the reply is asked for whole. Contract: must not throw; it is called inline while the reply streams.
   */
  onText?: (delta: string) => void;
}

export interface ModelReply {
  content: string | null;
  toolCalls: ToolCall[];
  /**
   * What the server reported; absent when it reported nothing. A missing or zero count is charged the
   * engine's estimate instead (src/loop/estimate.ts), never 0.
   */
  usage?: ModelUsage;
  /** The model that actually answered (prices are looked up by it). */
  model: string;
  /**
   * Why the model stopped, as the server said (`stop`, `tool_calls`, `length`, `content_filter`);
   * absent when it said nothing.
   */
  finishReason?: string;
  /** The model's refusal text, when it refused to answer. */
  refusal?: string;
}

/**
 * Contract: resolves with a reply, or rejects with `ModelError` once the adapter's own retries are
 * exhausted. Any other rejection is treated as a model error too.
 */
export interface ModelPort {
  /** The model asked for, when known: prices the estimate made before a call (else `defaultPrice`). */
  readonly model?: string;
  complete(request: ModelRequest): Promise<ModelReply>;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

/** Waits `ms`; rejects when `signal` aborts first. A port, so tests retry without real waits. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export type EngineEvent =
  | { type: 'step_started'; runId: string; step: number }
  | {
      type: 'model_replied';
      runId: string;
      step: number;
      toolCalls: number;
      durationMs: number;
      usage: ModelUsage;
      costUsd: number;
      /** The model that answered (a fallback's name when the primary failed). */
      model?: string;
      finishReason?: string;
    }
  | {
      type: 'tool_started';
      runId: string;
      toolCallId: string;
      tool: string;
      effect: ToolEffect;
      args: unknown;
    }
  | {
      type: 'tool_finished';
      runId: string;
      toolCallId: string;
      tool: string;
      effect: ToolEffect;
      ok: boolean;
      code?: string;
      durationMs: number;
    }
  | {
      type: 'tool_retried';
      runId: string;
      toolCallId: string;
      tool: string;
      effect: ToolEffect;
      attempt: number;
      code: string;
      message: string;
      delayMs: number;
    }
  | { type: 'approval_needed'; runId: string; calls: GatedCall[] }
  /** An approved call's plan changed before it ran: it did not run and is asked again with this plan. */
  | { type: 'plan_changed'; runId: string; toolCallId: string; tool: string; plan: CallPlan }
  | { type: 'decision_applied'; runId: string; toolCallId: string; decision: DecisionKind; by?: string }
  | { type: 'answer_rejected'; runId: string; problems: string[] }
  | ({ type: 'context_compacted'; runId: string; durationMs: number } & CompactionRecord)
  | { type: 'delegated'; runId: string; calls: DelegatedCall[] }
  | {
      type: 'subagent_finished';
      runId: string;
      toolCallId: string;
      agent: string;
      childRunId: string;
      outcome: ChildOutcome['status'];
      durationMs: number;
    }
  | { type: 'budget_asked'; runId: string; ask: BudgetAsk }
  | { type: 'budget_extended'; runId: string; extension: BudgetExtension }
  | { type: 'finished'; runId: string; status: RunStatus; stopReason: StopReason; message: string };

/** Contract: must not throw; it is called inline on the hot path. */
export type EventSink = (event: EngineEvent) => void;

/**
 * Called after every model reply and every batch of tool results, before anything else happens, so a
 * crash never loses a paid model reply or re-runs a recorded side effect. May throw (e.g. a lost lease):
 * the error propagates out of the engine untouched.
 */
export type Checkpoint = (state: RunState) => Promise<void>;

/**
 * Guards the execution of an approved gated call (the worker's ledger: approved -> executing ->
 * succeeded | failed, checked with a fencing token). Without a ledger the engine executes directly.
 */
export interface ExecutionLedger {
  /**
   * Return `proceed: false` with a result to skip execution (e.g. it already ran, or the lease is lost).
   * `plans`: the hashes of the approved plan and of the plan current at execution, recorded with it.
   */
  begin(
    call: GatedCall,
    plans?: PlanHashes,
  ): Promise<{ proceed: true } | { proceed: false; result: ToolResult }>;
  finish(call: GatedCall, result: ToolResult): Promise<void>;
  /**
   * Whether nothing began executing the call yet, so its plan may still stop it (absent: true). A call
   * that began (or ended) is never planned again: the ledger's record answers for it.
   */
  unstarted?(call: GatedCall): Promise<boolean>;
  /** Records that the plan check stopped the call before it began (changed or failed plan); nothing ran. */
  block?(call: GatedCall, result: ToolResult, plans: PlanHashes): Promise<void>;
}

/** Which plan was approved and which was current at execution (null: none, or it could not be computed). */
export interface PlanHashes {
  approved: string | null;
  current: string | null;
}

export interface EngineDeps {
  model: ModelPort;
  /** The tools offered to the model in this run. */
  tools: ReadonlyMap<string, AnyTool>;
  /**
   * Why a tool that exists but is not in `tools` was withheld from this run (a channel's permissions):
   * a call to it gets this error result instead of `unknown_tool`. Absent: none withheld.
   */
  withheld?: (tool: string) => { code: string; message: string } | null;
  clock: Clock;
  emit: EventSink;
  logger: Logger;
  checkpoint?: Checkpoint;
  ledger?: ExecutionLedger;
  /** The run's Slack thread (`channel:thread_ts`), handed to tools in their context. */
  threadId?: string;
  /** Waits between retries; default a real timer. */
  sleep?: Sleep;
  /** Uniform in [0, 1), for the retry jitter; default Math.random. */
  random?: () => number;
  /** Extra checks on a candidate final answer; return problems (empty when fine). */
  validateAnswer?: (answer: string, state: RunState) => string[];
  /** Where results longer than `maxObservationChars` are kept for `read_result`; absent: none are. */
  results?: ResultStore;
  /**
   * Receives the model's reply text while it streams (step = the model call's number). Absent: replies
   * are asked for whole. Presentation only: what the run does is decided by the complete reply.
   * Contract: must not throw.
   */
  onModelText?: (text: { runId: string; step: number; delta: string }) => void;
  /**
   * Aborted once someone cancelled the run (a durable cancel record exists; the worker learns of it by
   * pub/sub or polling). The model request and the read calls in flight are abandoned at once (a read
   * gets a `cancelled` result) and the run stops at the next step boundary. It never reaches an approved
   * write or notify call: one that started runs to its end and its result is recorded. Absent: a cancel
   * is seen only at step boundaries.
   */
  cancelSignal?: AbortSignal;
}

// ---------------------------------------------------------------------------------------------------
// Run state: plain, versioned JSON
// ---------------------------------------------------------------------------------------------------

export const RUN_STATE_VERSION = 1 as const;

export type RunStatus = 'running' | 'awaiting_approval' | 'completed' | 'failed' | 'stopped' | 'cancelled';

export type StopReason =
  | 'completed'
  | 'max_steps'
  | 'deadline'
  | 'token_budget'
  | 'cost_budget'
  | 'loop_detected'
  | 'tool_errors'
  | 'model_error'
  | 'validation_failed'
  | 'output_limit'
  | 'content_filter'
  | 'refused'
  | 'internal_error'
  | 'context_overflow'
  | 'cancelled';

export interface ModelPrice {
  inputPerMTok: number;
  outputPerMTok: number;
  /** Price of input tokens read from the server's prompt cache; absent: `inputPerMTok`. */
  cachedInputPerMTok?: number;
}

/** Fixed when the run is created, so a config change never alters a run mid-way. */
export interface RunLimits {
  maxSteps: number;
  /** Active (not paused) wall-clock time the run may use. */
  deadlineMs: number;
  maxTokens: number;
  /** Most tokens one reply may use (sent as the output bound; models refuse bounds above their own). */
  maxReplyTokens: number;
  maxCostUsd: number;
  /** Prices per model name; a model missing here is priced by `defaultPrice`. */
  prices: Record<string, ModelPrice>;
  defaultPrice: ModelPrice;
  /** Consecutive failed tool results that stop the run (`tool_errors`). */
  maxConsecutiveToolErrors: number;
  /** Identical consecutive calls that stop the run (`loop_detected`). */
  maxIdenticalCalls: number;
  /** Tool calls of one model reply that are acted on; later ones get a `too_many_calls` result. */
  maxToolCallsPerReply: number;
  /** Gated calls of one reply put to people at once; later ones get a `too_many_calls` result. */
  maxGatedCallsPerPause: number;
  /** Characters of one tool result the model may see; longer ones keep head and tail. */
  maxObservationChars: number;
  /** Default per-call timeout of tools that declare none. */
  toolTimeoutMs: number;
  /** Rejected final answers sent back to the model before the run fails (`validation_failed`). */
  maxAnswerRetries: number;
  /** Longest final answer accepted; longer ones go back to the model to be shortened. */
  maxAnswerChars: number;
  /** The model's context window and what is kept outside it; absent (runs of older versions): none. */
  context?: ContextLimits;
  /** Levels of sub-agents below a person's run (absent: DEFAULT_AGENT_DEPTH). */
  maxAgentDepth?: number;
  /** Sub-agent calls of one reply started at once; later ones get `too_many_calls` (absent: 4). */
  maxParallelAgents?: number;
  /** More budget a person may grant when a budget runs out (absent: none; the run stops as it always did). */
  extend?: BudgetExtendLimits;
}

/** The budgets a person may extend; each is the stop reason of that budget. */
export type ExtendableStop = 'max_steps' | 'deadline' | 'token_budget' | 'cost_budget';

/** An addition to a run's budgets (only the budget that ran out is ever extended by one grant). */
export interface BudgetIncrease {
  steps?: number;
  deadlineMs?: number;
  tokens?: number;
  costUsd?: number;
}

/**
 * What one grant adds to the budget that ran out (0: that budget is never extended) and how many grants a
 * run may get in all, so a run's budgets never pass their limits plus `times` grants.
 */
export interface BudgetExtendLimits {
  steps: number;
  deadlineMs: number;
  tokens: number;
  costUsd: number;
  times: number;
}

/** A run paused at a budget it used up, asking a person for more (src/loop/budget-extension.ts). */
export interface BudgetAsk {
  /** 1 for the first ask of the run, 2 for the next…: the number of the grant it would be. */
  round: number;
  reason: ExtendableStop;
  /** The stop sentence the run ends with if nobody grants more. */
  message: string;
  offer: BudgetIncrease;
  at: number;
}

/** A grant of more budget, recorded on the run. */
export interface BudgetExtension {
  round: number;
  reason: ExtendableStop;
  added: BudgetIncrease;
  /** Slack user id of who granted it. */
  by: string;
  at: number;
}

/** A person's answer to a budget ask of round `round`. */
export type BudgetDecision =
  | { round: number; kind: 'granted'; by: string }
  | { round: number; kind: 'refused'; by: string }
  | { round: number; kind: 'expired' };

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  /** Of `inputTokens`, those read from the server's prompt cache; absent: none reported. */
  cachedInputTokens?: number;
  costUsd: number;
  /** Active time used before the current running segment. */
  activeMs: number;
  /** Start of the current running segment, or null while paused or ended. */
  activeSince: number | null;
}

export type DecisionKind = 'approved' | 'rejected' | 'expired' | 'cancelled' | 'outcome_unknown';

/** A write/notify call waiting for (or resolved by) a human decision. */
export interface GatedCall {
  toolCallId: string;
  tool: string;
  effect: Exclude<ToolEffect, 'read'>;
  /** Validated arguments, exactly as they will be executed. */
  args: unknown;
  /** sha256 of the canonical JSON of `args`; an approval is valid only for this hash. */
  argsHash: string;
  /** The tool's preview, when it has one (or why the preview failed). */
  preview?: string;
  /**
   * The tool's plan for the arguments that will run, as last computed (when the tool has `plan`): what
   * approvers are shown, and what the plan at execution is compared with.
   */
  plan?: CallPlan;
  /** The model's own words accompanying the call: its stated reason. */
  reason?: string;
  idempotent: boolean;
}

/** A tool's plan of one call as computed at one moment: its text and hash, or why it could not be computed. */
export type CallPlan = { ok: true; text: string; hash: string } | { ok: false; error: string };

/** One slot per tool call of the current assistant turn; filled in any order, flushed in call order. */
export interface TurnSlot {
  toolCallId: string;
  tool: string;
  result: ToolResult | null;
}

export interface Turn {
  slots: TurnSlot[];
  /** Gated calls of this turn still waiting for a decision. */
  pending: GatedCall[];
  /** Sub-agent calls of this turn still waiting for their child run to end (absent: none). */
  delegated?: DelegatedCall[];
  /**
   * The longest active time of this turn's children charged so far: children work side by side, so the
   * run is charged the longest one, not their sum (absent: 0).
   */
  delegatedActiveMs?: number;
}

/** A gated call's end, kept so the final answer can be checked against what really happened. */
export interface ActionRecord {
  toolCallId: string;
  tool: string;
  argsHash: string;
  outcome: 'succeeded' | 'failed' | 'rejected' | 'expired' | 'cancelled' | 'outcome_unknown' | 'not_executed';
  decidedBy?: string;
  reason?: string;
  summary: string;
}

export interface Evidence {
  toolCallId: string;
  tool: string;
  kind: 'result' | 'verification';
  ok: boolean;
  summary: string;
  at: number;
}

export interface RunState {
  version: typeof RUN_STATE_VERSION;
  runId: string;
  status: RunStatus;
  requester: Requester;
  /** The person's question that started the run (also the last `user` message of the initial history). */
  question: string;
  messages: Message[];
  /** Model calls made so far (a compaction's summary calls are not counted). */
  step: number;
  usage: Usage;
  limits: RunLimits;
  /** The assistant turn whose tool calls are not all answered yet, or null. */
  turn: Turn | null;
  actions: ActionRecord[];
  evidence: Evidence[];
  /** `tool:argsHash` of calls a person rejected; an identical call is refused without asking. */
  rejected: Record<string, { by?: string; reason?: string }>;
  brakes: { consecutiveToolErrors: number; lastCallSignature: string | null; identicalCalls: number };
  answerRetries: number;
  /** The accepted final answer, split into Slack-sized parts. */
  answer: string[] | null;
  stopReason: StopReason | null;
  /** One sentence a person can read about why the run ended. */
  stopMessage: string | null;
  createdAt: number;
  updatedAt: number;
  /**
   * Compactions of the history, oldest first; the last one decides what the model sees (context.ts).
   * Append-only, stored in a list of their own. Absent: none.
   */
  compactions?: CompactionRecord[];
  /** Token accounting of the context window; absent until the first reply that reports usage. */
  context?: ContextUse;
  /** Set on a sub-agent's run: whose call it answers. Fixed at creation (absent: a person's run). */
  agent?: AgentLink;
  /** The ends of this run's sub-agent calls, in the order they were applied (absent: none). */
  subagents?: SubagentRecord[];
  /** Set while the run waits for a person to grant more budget (absent or null: it does not). */
  budgetAsk?: BudgetAsk | null;
  /** The budget grants of the run, oldest first; they add to `limits` (absent: none). */
  extensions?: BudgetExtension[];
}

/**
 * What one call of `step`, `applyDecisions` or `applyChildOutcomes` leaves the run in. An interruption
 * waits for decisions on `gated` and for the child runs of `delegated` (absent: none).
 */
export type StepOutcome =
  | { type: 'run_again'; state: RunState }
  | { type: 'interruption'; state: RunState; gated: GatedCall[]; delegated?: DelegatedCall[] }
  /** A budget ran out and the policy lets a person extend it: the run waits on `state.budgetAsk`. */
  | { type: 'budget_ask'; state: RunState }
  | { type: 'final'; state: RunState };

export interface Decision {
  toolCallId: string;
  kind: DecisionKind;
  /**
   * Required for `approved`: must equal the gated call's `argsHash` (or, with `edited`, the hash of the
   * edited arguments), or nothing executes.
   */
  argsHash?: string;
  /** An approver replaced the model's arguments before approving: these run instead (checked again). */
  edited?: { args: unknown; by?: string };
  /**
   * With `approved`: the plan the deciding approvers were shown. A tool with `plan` runs only when its plan
   * computed immediately before execution is the same plan; absent or failed, it is asked again.
   */
  plan?: CallPlan;
  /** Slack user id of the person who decided. */
  by?: string;
  reason?: string;
  /**
   * With `rejected`: the call was in shadow mode (shown, never run). The model is told so, the action is
   * recorded as not executed, and it is not remembered as a person's rejection.
   */
  shadow?: boolean;
}

// ---------------------------------------------------------------------------------------------------
// Runs longer than the context window (src/loop/context.ts, compaction.ts, large-results.ts)
// ---------------------------------------------------------------------------------------------------

/** Fixed when the run is created, like the other limits. */
export interface ContextLimits {
  /**
   * Tokens a request (input plus the reply bound) may use: the smallest context window among the
   * models that may answer it (the primary and its fallbacks).
   */
  windowTokens: number;
  /** Compact when the next request's estimated input passes this percentage of the window. */
  compactAtPercent: number;
  /** Longest summary a compaction asks for, in tokens (the summary call's reply bound). */
  summaryTokens: number;
  /** Bytes of one long tool result kept for `read_result` (longer ones keep their start); 0: none kept. */
  maxStoredResultBytes: number;
  /** Bytes of long results kept per run; a result that would pass it is not kept. */
  maxStoredBytesPerRun: number;
}

/** The run's token accounting against the context window. */
export interface ContextUse {
  /**
   * Input tokens the server reported for the last reply, divided by the engine's own estimate of that
   * request: scales the next estimate (clamped, see context.ts).
   */
  tokenRatio: number;
  /** Requests the server refused in a row as longer than its window; the next one is compacted first. */
  refusals?: number;
}

/**
 * One compaction: `messages[1, upTo)` are replaced, in what the model sees, by the person's question
 * (sent again) and one assistant message holding `summary` (written by the model) and `notes` (written
 * by loopgate: the gated actions and their outcomes, the evidence). The stored messages never change.
 */
export interface CompactionRecord {
  /** First message index the model still sees as it is. */
  upTo: number;
  /** Messages the run had when it was compacted. */
  messages: number;
  summary: string;
  notes: string;
  /** Agent model calls made before it (state.step). */
  step: number;
  at: number;
  /** Estimated input tokens of the next request before and after. */
  tokensBefore: number;
  tokensAfter: number;
  /** Model calls the summary took (more than one when the earlier part was summarised in chunks). */
  calls: number;
  usage: ModelUsage;
  costUsd: number;
  /** The model that wrote the (last part of the) summary. */
  model?: string;
}

/** The outcome of keeping a long result. */
export type KeptResult = { kept: true } | { kept: false; reason: string };

/**
 * Keeps the whole text of long tool results of one run, so `read_result` can page through them.
 * Contract: `keep` resolves `{ kept: false }` when a bound refuses the text, and may throw when the
 * store cannot be reached (the engine then shows the cut result without a handle); `read` resolves
 * null for a handle it does not hold.
 */
export interface ResultStore {
  keep(handle: string, text: string, maxRunBytes: number): Promise<KeptResult>;
  read(handle: string): Promise<string | null>;
}

// ---------------------------------------------------------------------------------------------------
// Sub-agents: a call of `ask_<agent>` is answered by a child run (src/loop/delegate.ts)
// ---------------------------------------------------------------------------------------------------

/** The most a child run may spend: what its parent has left, the tokens and cost shared among siblings. */
export interface ChildCaps {
  maxTokens: number;
  maxCostUsd: number;
  /** Active time: children work side by side, so each may use all the parent has left. */
  deadlineMs: number;
}

/** A call handed to a sub-agent; its slot is filled only by the child run's end. */
export interface DelegatedCall {
  toolCallId: string;
  tool: string;
  agent: string;
  /** The child run answering it: `childRunIdFor(runId, toolCallId)`. */
  childRunId: string;
  task: string;
  context?: string;
  caps: ChildCaps;
  /** When the call was handed over (epoch ms). */
  at: number;
}

/** Whose call a sub-agent's run answers. */
export interface AgentLink {
  name: string;
  parentRunId: string;
  parentToolCallId: string;
  /** 1 for a sub-agent of a person's run, 2 for a sub-agent of that sub-agent, and so on. */
  depth: number;
  /** The agents from the top run down to this one (this one last): none of them may be asked again. */
  lineage: string[];
}

/** A write/notify action of a sub-agent (or of one of its own sub-agents), as its end reports it. */
export interface ChildAction extends ActionRecord {
  /** The agent whose run executed (or did not execute) it. */
  agent: string;
}

export interface ChildUsage {
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  activeMs: number;
  /** Model calls of the child run itself. */
  steps: number;
}

/** How a child run ended, as the worker reads it from the store: what the parent's slot is filled with. */
export interface ChildOutcome {
  toolCallId: string;
  childRunId: string;
  agent: string;
  status: 'completed' | 'failed' | 'stopped' | 'cancelled';
  stopReason: StopReason | null;
  stopMessage: string | null;
  /** The child's accepted answer, its parts joined; null when it ended without one. */
  answer: string | null;
  /** Its actions and those of its own sub-agents, in order. */
  actions: ChildAction[];
  /** Its usage, its own sub-agents' included (they were charged to it). */
  usage: ChildUsage;
}

/** The end of one sub-agent call of a run; `abandoned` when the run ended first (the child is cancelled). */
export interface SubagentRecord {
  toolCallId: string;
  agent: string;
  childRunId: string;
  outcome: ChildOutcome['status'] | 'abandoned';
  stopReason: StopReason | null;
  actions: ChildAction[];
  usage?: ChildUsage;
}
