/** Runs longer than the context window (src/loop/context.ts, compaction.ts, large-results.ts). */
import type { ModelUsage } from './model-port.js';

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
