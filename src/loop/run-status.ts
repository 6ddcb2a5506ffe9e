/** Where a run stands, and why it ended. */

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
