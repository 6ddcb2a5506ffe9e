/**
 * Identifiers shared by the builders (which put them on buttons and views) and the Bolt handlers (which
 * match on them). Buttons carry only an id in `value`; everything else is looked up on the server.
 */
export const ACTION_IDS = {
  /** value: the approval id. */
  approve: 'loopgate_approve',
  /** value: the approval id. Opens the reject-reason modal. */
  reject: 'loopgate_reject',
  /** value: the approval id of a call whose outcome is unknown, or that failed transiently ("Retry"). */
  reapprove: 'loopgate_reapprove',
  /** value: the approval id. Opens the break-glass modal (reason and incident reference). */
  breakGlass: 'loopgate_break_glass',
  /** value: the run id. Opens the trace modal. */
  details: 'loopgate_details',
  /** value: the approval id. Opens the Full text modal (complete arguments, preview and reason). */
  fullText: 'loopgate_full_text',
  /** value: the approval id. Opens the Edit modal (a form from the tool's schema). */
  edit: 'loopgate_edit',
  /** value: the approval id. Opens the grant modal: approve, and allow similar calls for a while. */
  approveGrant: 'loopgate_approve_grant',
  /** value: a grant reference (see src/policy/grant-store.ts). Revokes that grant. */
  revokeGrant: 'loopgate_revoke_grant',
  /** value: the approval id of a shadow call. Records what the clicker would decide; nothing runs. */
  wouldApprove: 'loopgate_would_approve',
  /** value: the approval id of a shadow call. */
  wouldReject: 'loopgate_would_reject',
  /** On a budget ask card; value: `<runId>/<round>` (budget-card.ts). Grants the offered budget. */
  budgetContinue: 'loopgate_budget_continue',
  /** On a budget ask card; value: `<runId>/<round>`. Ends the run with its stop reason. */
  budgetStop: 'loopgate_budget_stop',
  /** The feedback buttons under an answer; value: `good:<runId>` or `bad:<runId>` (final-answer.ts). */
  feedback: 'loopgate_feedback',
} as const;

export const CALLBACK_IDS = {
  rejectReason: 'loopgate_reject_reason',
  trace: 'loopgate_trace',
  fullText: 'loopgate_full_text',
  edit: 'loopgate_edit',
  grant: 'loopgate_grant',
  breakGlass: 'loopgate_break_glass',
  feedbackComment: 'loopgate_feedback_comment',
} as const;

/** block_id / action_id of the comment input in the feedback modal. */
export const FEEDBACK_COMMENT_INPUT = { blockId: 'comment', actionId: 'comment' } as const;

/** block_id / action_id of the reason input in the reject-reason modal. */
export const REJECT_REASON_INPUT = { blockId: 'reason', actionId: 'reason' } as const;
