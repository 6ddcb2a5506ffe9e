/**
 * Who may decide an approval, checked on the server for every click: the policy's approvers of the tool
 * (Slack user ids, and user groups whose members are looked up with usergroups.users.list and cached),
 * and, for approving, never the requester unless `approvals.selfApproval` allows it. Rejecting is also
 * open to the requester: it only stops their own call, which they could cancel anyway.
 */

import type { Approvers } from '../approvers/approvers.js';
import { approverMentions } from '../approvers/mentions.js';
import { type ApproverLookups, isApprover, type OncallShown } from '../approvers/resolve.js';
import type { Policy } from '../config/policy.js';
import { escapeMrkdwn } from '../slack/mrkdwn.js';
import type { ApprovalRecord } from '../store/index.js';

export type Decision = 'approve' | 'reject';

type Verdict = { ok: true } | { ok: false; reason: 'not_approver' | 'self_approval' | 'lookup_failed' };

/**
 * May `userId` take `decision` on this approval? Its approvers are those the policy named when it was
 * asked (the matching rule's, or the tool's; escalation adds more), as its card shows them; whether the
 * requester may approve is the rule's `selfApproval`, else the policy's.
 */
export async function mayDecide(
  policy: Policy,
  record: Pick<ApprovalRecord, 'tool' | 'requester' | 'approvers' | 'selfApproval'>,
  userId: string,
  decision: Decision,
  lookups: ApproverLookups,
): Promise<Verdict> {
  const isRequester = userId === record.requester;
  if (decision === 'reject' && isRequester) return { ok: true };
  const approver = await isApprover(record.approvers, userId, lookups);
  if (!approver.ok) return approver;
  const selfApproval = record.selfApproval ?? policy.approvals.selfApproval;
  if (isRequester && !selfApproval) return { ok: false, reason: 'self_approval' };
  return { ok: true };
}

/**
 * `<@U…>, <!subteam^S…>`, each on-call source with who is on call now when `shown` resolved it, or a note
 * that nobody is configured.
 */
export function approversText(approvers: Approvers, shown?: readonly OncallShown[]): string {
  const all = approverMentions(approvers, shown);
  return all.length === 0 ? 'nobody (no approvers are configured)' : all.join(', ');
}

/** Why a click was refused, for the clicker. */
export function verdictText(
  verdict: Exclude<Verdict, { ok: true }>,
  record: Pick<ApprovalRecord, 'tool' | 'approvers'>,
  decision: Decision | 'edit',
  shown?: readonly OncallShown[],
): string {
  const tool = record.tool;
  switch (verdict.reason) {
    case 'self_approval':
      return 'You asked for this run, and the policy does not let requesters approve their own calls. Another approver has to decide.';
    case 'lookup_failed':
      return 'I could not check your user group membership with Slack just now. Nothing was changed; please try again in a moment.';
    case 'not_approver':
      return `You may not ${decision} \`${escapeMrkdwn(tool)}\` calls. They can be decided by ${approversText(record.approvers, shown)}. Nothing was changed.`;
  }
}
