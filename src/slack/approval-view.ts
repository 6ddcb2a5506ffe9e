import { type ApproverLookups, type OncallShown, resolveOncall } from '../approvers/resolve.js';
import type { ApprovalRecord } from '../store/records.js';
import type { ApprovalStatus, ApprovalView } from './approval-card.js';

/** What rules, quorums, grants and edits add to the card. */
function policyView(record: ApprovalRecord): Partial<ApprovalView> {
  return {
    ...(record.rule ? { rule: record.rule } : {}),
    ...(record.approversFrom ? { approversFrom: record.approversFrom } : {}),
    ...((record.quorum ?? 1) > 1
      ? { quorum: record.quorum ?? 1, votes: (record.votes ?? []).map((v) => v.by) }
      : {}),
    ...(record.grantOffer ? { grantOffer: record.grantOffer } : {}),
    ...(record.schema ? { editable: true } : {}),
    ...(record.original && record.editedBy
      ? { edited: { by: record.editedBy, originalArgs: record.original.args } }
      : {}),
    ...(record.escalatedAt ? { escalatedAt: record.escalatedAt } : {}),
    ...(record.breakGlass ? { breakGlass: record.breakGlass } : {}),
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
    ...(record.plan ? { plan: record.plan } : {}),
    ...(record.replanOf ? { planChanged: record.replanOf.plan ? { before: record.replanOf.plan } : {} } : {}),
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
    ...(record.via === 'shadow'
      ? {
          shadow: {
            why:
              /^shadow mode \((.*)\): not executed$/s.exec(record.decisionReason ?? '')?.[1] ?? 'shadow mode',
            askedAt: record.createdAt,
            ...(record.shadowDecision ? { decided: record.shadowDecision } : {}),
          },
        }
      : {}),
  };
}

/**
 * The card of an approval as it stands now, for every redraw by the bot or a worker: a pending approval
 * with on-call approvers names who is on call at this moment (`shown`, when the caller resolved it
 * already, else resolved here), so a handoff shows on the next redraw.
 */
export async function approvalViewNow(
  record: ApprovalRecord,
  lookups: Pick<ApproverLookups, 'oncall'>,
  shown?: readonly OncallShown[],
): Promise<ApprovalView> {
  const view = approvalViewFromRecord(record);
  if (record.status !== 'pending' || !record.approvers.oncall?.length) return view;
  return { ...view, oncallNow: shown ?? (await resolveOncall(record.approvers, lookups)) };
}
