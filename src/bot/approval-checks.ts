/**
 * The server-side checks of a click on an approval card, in order: the approval exists, the click came
 * from that approval's own card, the clicker may take this decision, and the approval is still pending.
 * The button carries only the approval id, so everything else is looked up here. A failed check yields the
 * sentence the clicker is shown; nothing is changed.
 */
import { slackDate, userMention } from '../slack/mrkdwn.js';
import { type ApprovalRecord, isApprovalId } from '../store/index.js';
import { type Decision, mayDecide, verdictText } from './approvers.js';
import type { BotContext } from './context.js';

export interface ApprovalClick {
  approvalId: string;
  userId: string;
  /** Channel and ts of the message the click came from. */
  channelId: string | undefined;
  messageTs: string | undefined;
  /**
   * The click came from the clicker's App Home, which lists the approvals they may decide with the
   * cards' buttons: there is no card message to match; every other check is the same.
   */
  fromHome?: boolean;
}

/** A card's place in Slack. */
export type Card = NonNullable<ApprovalRecord['card']>;

export type ClickCheck = { ok: true; record: ApprovalRecord; card: Card } | { ok: false; message: string };

const refuse = (message: string): ClickCheck => ({ ok: false, message });

export async function checkApprovalClick(
  ctx: Pick<BotContext, 'store' | 'policy' | 'groups' | 'clock'>,
  click: ApprovalClick,
  decision: Decision,
): Promise<ClickCheck> {
  const check = await checkCardClick(ctx, click, decision);
  if (!check.ok) return check;
  const closed = closedText(check.record, ctx.clock.now());
  return closed ? refuse(closed) : check;
}

/**
 * The checks of any click on an approval card except that it is still pending: the approval exists, the
 * click came from its own card, and the clicker may take this decision ("Approve again" after an unknown
 * outcome is on an approval that was decided long ago).
 */
export async function checkCardClick(
  ctx: Pick<BotContext, 'store' | 'policy' | 'groups'>,
  click: ApprovalClick,
  decision: Decision,
): Promise<ClickCheck> {
  if (!isApprovalId(click.approvalId)) return refuse('This button does not carry a valid approval id.');
  const record = await ctx.store.approvals.get(click.approvalId);
  if (!record) {
    return refuse('I cannot find this approval any more (it may have been cleaned up). Nothing was changed.');
  }
  const card = record.card;
  if (!card) {
    return refuse('This approval card is still being set up. Nothing was changed; try again in a moment.');
  }
  if (!click.fromHome && (card.channel !== click.channelId || card.ts !== click.messageTs)) {
    return refuse(
      'This button does not belong to the approval card it was clicked on, so it was ignored. Nothing was changed.',
    );
  }
  const verdict = await mayDecide(ctx.policy, record, click.userId, decision, ctx.groups);
  if (!verdict.ok) return refuse(verdictText(verdict, record, decision));
  return { ok: true, record, card };
}

/**
 * Why an approval can no longer be decided (who decided what and when, or that it expired or was
 * cancelled), or null while it is pending and not yet expired.
 */
export function closedText(record: ApprovalRecord, now: number): string | null {
  const at = record.decidedAt === null ? '' : ` ${slackDate(record.decidedAt)}`;
  const by = record.decidedBy ? ` by ${userMention(record.decidedBy)}` : '';
  switch (record.status) {
    case 'pending':
      return now >= record.expiresAt
        ? `This approval expired ${slackDate(record.expiresAt)} without a decision. Nothing was changed.`
        : null;
    case 'approved':
      return `This was already approved${by}${at}. Nothing more was changed.`;
    case 'rejected':
      return `This was already rejected${by}${at}. Nothing more was changed.`;
    case 'expired':
      return `This approval expired${at || ` ${slackDate(record.expiresAt)}`} without a decision. Nothing was changed.`;
    case 'cancelled':
      return `This approval was cancelled${by}${at} (the run was cancelled). Nothing was changed.`;
    case 'superseded':
      return `The arguments were edited${by}${at}; decide on the card as it is now. Nothing was changed.`;
  }
}
