/** Sub-agents: a call of `ask_<agent>` is answered by a child run (src/loop/delegate.ts). */
import type { ActionRecord } from './gated-calls.js';
import type { StopReason } from './run-status.js';

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

interface ChildUsage {
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
