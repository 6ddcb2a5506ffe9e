/** Tool results: what a tool call produced, as the model will read it, and the stable codes of failures. */
import type { VerifyResult } from './tool-contract.js';

/** Stable codes of failed tool results; the model reads them, tests and dashboards rely on them. */
type ToolErrorCode =
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
