/** What the engine tells the world as a run goes (the trace, metrics, spans and Slack surfaces read them). */
import type { BudgetAsk, BudgetExtension } from './budget-asks.js';
import type { CompactionRecord } from './context-window.js';
import type { CallPlan, DecisionKind, GatedCall } from './gated-calls.js';
import type { ModelUsage } from './model-port.js';
import type { RunStatus, StopReason } from './run-status.js';
import type { ChildOutcome, DelegatedCall } from './subagents.js';
import type { ToolEffect } from './tool-contract.js';

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
