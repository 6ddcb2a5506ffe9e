/**
 * Would approve / Would reject on a shadow card (docs/approvals.md, "Shadow mode"). The click is checked
 * like a real decision (the approval exists, the click came from its own card in its channel, the
 * clicker may approve or reject it: approver lists, self-approval), then recorded by compare-and-set
 * (first click wins, audited as `shadow_decision`) and the card is redrawn saying who would have decided.
 * Nothing is queued and nothing runs: a shadow call's record is closed and has no ledger entry.
 */
import { approvalCard } from '../slack/approval-card.js';
import { approvalViewFromRecord } from '../slack/approval-view.js';
import { slackDate, userMention } from '../slack/mrkdwn.js';
import { StoreError } from '../store/index.js';
import { checkCardClick } from './approval-checks.js';
import { approvalClick, tellClicker } from './approvals.js';
import type { BotContext } from './context.js';
import type { ClickTarget } from './slack-payloads.js';

const VERB = { would_approve: 'would approve', would_reject: 'would reject' } as const;

async function shadowClicked(
  ctx: BotContext,
  target: ClickTarget,
  decision: 'would_approve' | 'would_reject',
): Promise<void> {
  const check = await checkCardClick(
    ctx,
    approvalClick(target),
    decision === 'would_approve' ? 'approve' : 'reject',
  );
  if (!check.ok) return tellClicker(ctx, target, check.message);
  const { record, card } = check;
  if (record.via !== 'shadow') {
    return tellClicker(ctx, target, 'This approval is not in shadow mode. Nothing was changed.');
  }
  const permalink = await ctx.slack.permalink(card.channel, card.ts);
  let result: Awaited<ReturnType<typeof ctx.store.approvals.shadowDecide>>;
  try {
    result = await ctx.store.approvals.shadowDecide({
      approvalId: record.approvalId,
      decision,
      by: target.userId,
      now: ctx.clock.now(),
      ...(permalink ? { permalink } : {}),
    });
  } catch (error) {
    if (error instanceof StoreError && error.code === 'not_shadow') {
      return tellClicker(ctx, target, 'This approval is not in shadow mode. Nothing was changed.');
    }
    throw error;
  }
  const recorded = result.record.shadowDecision;
  if (!result.won) {
    const who = recorded
      ? `${userMention(recorded.by)} answered first (${VERB[recorded.decision]}, ${slackDate(recorded.at)})`
      : 'someone answered first';
    return tellClicker(ctx, target, `${who}. Nothing more was recorded; nothing runs in shadow mode.`);
  }
  ctx.logger.info(
    { runId: record.runId, approvalId: record.approvalId, decision, by: target.userId },
    'shadow decision recorded',
  );
  ctx.background.run(
    'update shadow card',
    () => ctx.slack.updateMessage(card.channel, card.ts, approvalCard(approvalViewFromRecord(result.record))),
    { runId: record.runId, approvalId: record.approvalId },
  );
}

export const wouldApproveClicked = (ctx: BotContext, target: ClickTarget) =>
  shadowClicked(ctx, target, 'would_approve');
export const wouldRejectClicked = (ctx: BotContext, target: ClickTarget) =>
  shadowClicked(ctx, target, 'would_reject');
