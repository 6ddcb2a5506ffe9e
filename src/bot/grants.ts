/**
 * "Approve and allow similar calls", and revoking grants. The button is on cards whose rule offers a grant
 * (`grant: { args, maxMinutes }`, never with a quorum above 1). The same checks as Approve run on the click
 * and again on the form's submission; the call is approved first (first decision wins), and only then is
 * the grant created, in the call's thread, for the chosen time and scope. A grant can be revoked by its
 * grantor or by any approver of the call it was granted with.
 */

import { isApprover } from '../approvers/resolve.js';
import type { Grant } from '../policy/grants.js';
import { grantScopeText, grantValues } from '../policy/grants.js';
import { grantModal, parseGrantSubmission } from '../slack/grant-modal.js';
import { slackDate } from '../slack/mrkdwn.js';
import { type ApprovalRecord, StoreError } from '../store/index.js';
import { type ApprovalClick, checkApprovalClick } from './approval-checks.js';
// decide() queues the run's resume once the approval is recorded, as for a plain Approve.
import { approvalClick, decide } from './approvals.js';
import type { BotContext } from './context.js';
import type { ClickTarget } from './slack-payloads.js';

function offerOf(
  record: ApprovalRecord,
): { args: string[]; maxMinutes: number; values: Record<string, unknown> } | null {
  const offer = record.grantOffer;
  if (!offer || (record.quorum ?? 1) > 1) return null;
  const values = grantValues(record.args, offer.args);
  return values ? { ...offer, values } : null;
}

/** "Approve and allow similar calls" clicked: the Approve checks, then the form. */
export async function grantClicked(
  ctx: BotContext,
  target: ClickTarget,
  tell: (text: string) => Promise<void>,
): Promise<void> {
  const click: ApprovalClick = approvalClick(target);
  const check = await checkApprovalClick(ctx, click, 'approve');
  if (!check.ok) return tell(check.message);
  const offer = offerOf(check.record);
  if (!offer) return tell('This call cannot be granted for similar calls. Approve or reject it.');
  try {
    await ctx.slack.openView(
      target.triggerId,
      grantModal({
        approvalId: check.record.approvalId,
        channel: check.card.channel,
        messageTs: check.card.ts,
        tool: check.record.tool,
        covers: grantScopeText({ tool: check.record.tool, values: offer.values, scope: 'thread' }).replace(
          / in this thread$/,
          '',
        ),
        maxMinutes: offer.maxMinutes,
      }),
    );
  } catch (error) {
    ctx.logger.warn({ err: error, approvalId: check.record.approvalId }, 'could not open the grant modal');
    await tell('Slack did not let me open the form in time. Please click again.');
  }
}

/**
 * The grant form was submitted: approve (first decision wins; the run's resume is queued as for Approve),
 * then create the grant. Returns a notice for the form, or null to close it.
 */
export async function grantSubmitted(ctx: BotContext, userId: string, view: unknown): Promise<string | null> {
  const form = parseGrantSubmission(view);
  const check = await checkApprovalClick(
    ctx,
    { approvalId: form.approvalId, userId, channelId: form.channel, messageTs: form.messageTs },
    'approve',
  );
  if (!check.ok) return check.message;
  const { record, card } = check;
  const offer = offerOf(record);
  if (!offer) return 'This call cannot be granted for similar calls. Approve or reject it.';
  const minutes = Math.min(form.minutes || offer.maxMinutes, offer.maxMinutes);
  const run = await ctx.store.runs.loadRun(record.runId);
  if (!run) return 'I cannot find this run any more. Nothing was changed.';
  const now = ctx.clock.now();
  const until = now + minutes * 60_000;
  const scope = form.scope;
  const reason = `approved, and allowed similar calls for ${minutes} min in this ${scope}`;
  const decider = { channel: card.channel, user: userId };
  const outcome = await decide(ctx, record, 'approved', decider, reason, check.quorumInForce);
  if (!outcome.recorded) return outcome.message;
  let grant: Grant;
  try {
    grant = await ctx.store.grants.create({
      tool: record.tool,
      rule: record.rule ?? '',
      values: offer.values,
      scope,
      runId: record.runId,
      teamId: run.slack.teamId,
      channelId: run.slack.channelId,
      threadTs: run.slack.threadTs,
      grantedBy: userId,
      grantedAt: now,
      expiresAt: until,
      approvalId: record.approvalId,
      approvers: record.approvers,
    });
  } catch (error) {
    ctx.logger.error({ err: error, approvalId: record.approvalId }, 'approved, but the grant was not stored');
    return 'The call is approved, but the grant for similar calls could not be saved; later calls will ask again.';
  }
  ctx.logger.info(
    { runId: record.runId, approvalId: record.approvalId, grantId: grant.grantId },
    'grant created',
  );
  await ctx.slack.ephemeral(
    { ...decider, threadTs: run.slack.threadTs },
    `Approved. Later ${grantScopeText(grant)} run without asking until ${slackDate(until)} (grant \`${grant.grantId}\`; revoke it in App Home or with \`/loopgate grants revoke ${grant.grantId}\`).`,
  );
  return null;
}

/** Whether `userId` may revoke `grant`: its grantor, or an approver of the call it was granted with. */
async function mayRevoke(ctx: BotContext, grant: Grant, userId: string): Promise<boolean> {
  if (grant.grantedBy === userId) return true;
  return (await isApprover(grant.approvers, userId, ctx).catch(() => ({ ok: false }))).ok;
}

/** Revokes a grant by reference or id (found among the caller's and the channel's grants). */
export async function revokeGrant(ctx: BotContext, grant: Grant | null, userId: string): Promise<string> {
  if (!grant || !(await mayRevoke(ctx, grant, userId)))
    return 'You cannot revoke that grant, or it does not exist.';
  const removed = await ctx.store.grants.revoke(grant, userId, ctx.clock.now()).catch((error: unknown) => {
    if (error instanceof StoreError) return null;
    throw error;
  });
  if (removed === null) return 'The grant could not be revoked just now; please try again.';
  return removed
    ? `Revoked grant \`${grant.grantId}\`: ${grantScopeText(grant)} ask again from now on.`
    : `Grant \`${grant.grantId}\` had already ended.`;
}
