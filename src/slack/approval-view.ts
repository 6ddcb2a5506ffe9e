import type { ApprovalRecord } from '../store/records.js';
import type { ApprovalStatus, ApprovalView } from './approval-card.js';

/** What rules, quorums, grants and edits add to the card. */
function policyView(record: ApprovalRecord): Partial<ApprovalView> {
  return {
    ...(record.rule ? { rule: record.rule } : {}),
    ...((record.quorum ?? 1) > 1
      ? { quorum: record.quorum ?? 1, votes: (record.votes ?? []).map((v) => v.by) }
      : {}),
    ...(record.grantOffer ? { grantOffer: record.grantOffer } : {}),
    ...(record.schema ? { editable: true } : {}),
    ...(record.original && record.editedBy
      ? { edited: { by: record.editedBy, originalArgs: record.original.args } }
      : {}),
    ...(record.escalatedAt ? { escalatedAt: record.escalatedAt } : {}),
  };
}

/**
 * The card's view of a stored approval. `status` overrides the record's own for states the approval
 * record does not hold (the ledger's `outcome_unknown`); `outcome` says what running the call gave.
 */
export function approvalViewFromRecord(
  record: ApprovalRecord,
  status?: ApprovalStatus,
  outcome?: string,
): ApprovalView {
  return {
    approvalId: record.approvalId,
    runId: record.runId,
    tool: record.tool,
    effect: record.effect,
    args: record.args,
    argsHash: record.argsHash,
    preview: record.preview,
    reason: record.reason,
    requesterId: record.requester,
    approvers: record.approvers,
    expiresAt: record.expiresAt,
    status: status ?? record.status,
    decidedBy: record.decidedBy,
    decidedAt: record.decidedAt,
    decisionReason: record.decisionReason,
    ...(outcome ? { outcome } : {}),
    ...policyView(record),
    ...(record.agent ? { agent: record.agent } : {}),
  };
}
