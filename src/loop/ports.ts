/**
 * Ports of the loopgate engine. Everything the engine touches outside itself arrives through `EngineDeps`:
 * the model (model-port.ts), the tools (tool-contract.ts), the event sink (engine-events.ts) and the clock,
 * checkpoint, ledger and result store declared here; the engine imports neither Slack, BullMQ, Redis nor
 * the OpenAI SDK.
 */
import type { EventSink } from './engine-events.js';
import type { GatedCall, PlanHashes } from './gated-calls.js';
import type { ModelPort } from './model-port.js';
import type { RunState } from './run-state.js';
import type { AnyTool, Logger } from './tool-contract.js';
import type { ToolResult } from './tool-result.js';

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

/** Waits `ms`; rejects when `signal` aborts first. A port, so tests retry without real waits. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/**
 * Called after every model reply and every batch of tool results, before anything else happens, so a
 * crash never loses a paid model reply or re-runs a recorded side effect. May throw (e.g. a lost lease):
 * the error propagates out of the engine untouched.
 */
type Checkpoint = (state: RunState) => Promise<void>;

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
