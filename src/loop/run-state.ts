/** Run state: plain, versioned JSON; what one step leaves the run in. */
import type { BudgetAsk, BudgetExtension } from './budget-asks.js';
import type { CompactionRecord, ContextUse } from './context-window.js';
import type { ActionRecord, GatedCall } from './gated-calls.js';
import type { Message } from './messages.js';
import type { RunLimits } from './run-limits.js';
import type { RunStatus, StopReason } from './run-status.js';
import type { AgentLink, DelegatedCall, SubagentRecord } from './subagents.js';
import type { Requester } from './tool-contract.js';
import type { ToolResult } from './tool-result.js';

export const RUN_STATE_VERSION = 1 as const;

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

/** One slot per tool call of the current assistant turn; filled in any order, flushed in call order. */
interface TurnSlot {
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

export interface Evidence {
  toolCallId: string;
  tool: string;
  kind: 'result' | 'verification';
  ok: boolean;
  summary: string;
  at: number;
}

interface RunStateBase {
  version: typeof RUN_STATE_VERSION;
  runId: string;
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

/** A run still under way: working, or waiting for people (a turn's decisions or a budget ask). */
export interface LiveRun extends RunStateBase {
  status: Extract<RunStatus, 'running' | 'awaiting_approval'>;
  stopReason: null;
  stopMessage: null;
}

/** A run that ended, with why. */
export interface EndedRun extends RunStateBase {
  status: Exclude<RunStatus, 'running' | 'awaiting_approval'>;
  stopReason: StopReason;
  /** One sentence a person can read about why the run ended. */
  stopMessage: string;
}

export type RunState = LiveRun | EndedRun;

/** What a run that has not ended carries where an ended one says why it ended. */
export const NOT_ENDED = { stopReason: null, stopMessage: null } as const;

type Ending<R extends RunState> = Pick<R, 'status' | 'stopReason' | 'stopMessage'>;

/** Checks that a run's status and ending agree (a live run has none, an ended one has both). */
export function withEnding<
  S extends { status: RunStatus; stopReason: StopReason | null; stopMessage: string | null },
>(fields: S): (S & Ending<LiveRun>) | (S & Ending<EndedRun>) {
  const { status, stopReason, stopMessage } = fields;
  if (status === 'running' || status === 'awaiting_approval') {
    if (stopReason === null && stopMessage === null) return { ...fields, status, stopReason, stopMessage };
  } else if (stopReason !== null && stopMessage !== null) {
    return { ...fields, status, stopReason, stopMessage };
  }
  const reason = stopReason === null ? 'no stop reason' : `stop reason ${stopReason}`;
  throw new TypeError(
    `a run in status ${status} with ${reason} and ${stopMessage === null ? 'no' : 'a'} stop message`,
  );
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
