/** A run's limits and the prices it is charged by, fixed when the run is created. */
import type { BudgetExtendLimits } from './budget-asks.js';
import type { ContextLimits } from './context-window.js';

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
