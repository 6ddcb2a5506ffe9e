/**
 * Gated calls: write and notify calls put to people, the plan they are shown, what a person decides and how
 * each call ended (src/loop/decisions.ts, plan.ts).
 */
import type { ToolEffect } from './tool-contract.js';

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

/** Which plan was approved and which was current at execution (null: none, or it could not be computed). */
export interface PlanHashes {
  approved: string | null;
  current: string | null;
}

interface DecisionBase {
  toolCallId: string;
  /** Slack user id of the person who decided. */
  by?: string;
  reason?: string;
}

/** A call approved for exactly the arguments whose hash it names. */
export interface ApprovedDecision extends DecisionBase {
  kind: 'approved';
  /** Must equal the gated call's `argsHash` (or, with `edited`, the edited arguments' hash), or nothing executes. */
  argsHash: string;
  /** An approver replaced the model's arguments before approving: these run instead (checked again). */
  edited?: { args: unknown; by?: string };
  /**
   * The plan the deciding approvers were shown. A tool with `plan` runs only when its plan computed
   * immediately before execution is the same plan; absent or failed, it is asked again.
   */
  plan?: CallPlan;
}

export interface RejectedDecision extends DecisionBase {
  kind: 'rejected';
  /**
   * The call was in shadow mode (shown, never run). The model is told so, the action is recorded as not
   * executed, and it is not remembered as a person's rejection.
   */
  shadow?: boolean;
}

/** Nobody decided in time, the run was cancelled, or an approved call's outcome was lost in a crash. */
export interface UndecidedDecision extends DecisionBase {
  kind: 'expired' | 'cancelled' | 'outcome_unknown';
}

/** What became of one gated call; only an approval can make it run. */
export type Decision = ApprovedDecision | RejectedDecision | UndecidedDecision;

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
