/**
 * The server-side checks of a click on an approval card, in order: the approval exists, the click came
 * from that approval's own card, the clicker may take this decision, and the approval is still pending.
 * The button carries only the approval id, so everything else is looked up here. A failed check yields the
 * sentence the clicker is shown; nothing is changed. The clicker is judged by the rule in force at the
 * click (src/policy/rule-at-click.ts): a change freeze that started while the card waited can deny the
 * call or ask other people, or more of them, than the card did.
 */
import { type OncallShown, resolveOncall } from '../approvers/resolve.js';
import type { AskDecision } from '../policy/gate.js';
import { ruleAtClick } from '../policy/rule-at-click.js';
import { approvalCard } from '../slack/approval-card.js';
import { approvalViewNow } from '../slack/approval-view.js';
import { escapeMrkdwn, slackDate, userMention } from '../slack/mrkdwn.js';
import { type ApprovalRecord, isApprovalId } from '../store/index.js';
import { approversText, type Decision, mayDecide, verdictText } from './approvers.js';
import { channelAtClick } from './channel-at-click.js';
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

/**
 * `record` is the approval as the rule in force judges it: when a freeze changed the rule since the round
 * was asked, its approvers, quorum, self-approval, rule and grant offer are the new rule's, and
 * `quorumInForce` is the quorum the decision must be counted against (`quorumAsked`: the card's).
 */
type ClickCheck =
  | { ok: true; record: ApprovalRecord; card: Card; quorumInForce?: number; quorumAsked?: number }
  | { ok: false; message: string };

const refuse = (message: string): ClickCheck => ({ ok: false, message });

export async function checkApprovalClick(
  ctx: CheckContext,
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
  ctx: CheckContext,
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
  const inForce = ruleAtClick(ctx.policy, record, ctx.clock.now());
  if (inForce.kind === 'denied' && decision === 'approve') {
    return refuse(
      `${frozenText(inForce.freezes)}${escapeMrkdwn(inForce.rule)} now denies this \`${escapeMrkdwn(record.tool)}\` call: ${escapeMrkdwn(inForce.reason)}. It cannot be approved now; ${inForce.breakGlass ? `${breakGlassText(inForce.breakGlass.approvers)}, or ` : ''}Reject it, or wait until the freeze ends. Nothing was changed.`,
    );
  }
  // Per-channel permissions judged now: the channel's rule may refuse the tool or name the approvers.
  const channel = await channelAtClick(
    ctx,
    inForce.kind === 'asked_anew' ? askedAnew(record, inForce.ask) : record,
    card.channel,
    decision,
  );
  if (channel.kind === 'refused') return refuse(channel.message);
  const judged = channel.record;
  const verdict = await mayDecide(ctx.policy, judged, click.userId, decision, ctx);
  if (!verdict.ok) {
    // Refused by who is on call now: the clicker is told who is, and the card catches up with a handoff.
    const shown = await resolveOncall(judged.approvers, ctx);
    if (shown.length > 0 && record.status === 'pending' && inForce.kind !== 'asked_anew')
      redrawCard(ctx, record, card, shown);
    const why =
      inForce.kind === 'asked_anew' ? `${frozenText(inForce.freezes)}${askedText(inForce.ask)}` : '';
    return refuse(`${why}${verdictText(verdict, judged, decision, shown)}`);
  }
  if (inForce.kind !== 'asked_anew') return { ok: true, record: judged, card };
  return {
    ok: true,
    record: judged,
    card,
    quorumInForce: inForce.ask.quorum,
    quorumAsked: record.quorum ?? 1,
  };
}

type CheckContext = Pick<
  BotContext,
  'store' | 'policy' | 'groups' | 'oncall' | 'clock' | 'slack' | 'background' | 'channelFacts'
>;

function redrawCard(
  ctx: Pick<BotContext, 'slack' | 'background' | 'oncall'>,
  record: ApprovalRecord,
  card: Card,
  shown: readonly OncallShown[],
): void {
  ctx.background.run(
    'redraw the card with the on-call now',
    async () =>
      ctx.slack.updateMessage(card.channel, card.ts, approvalCard(await approvalViewNow(record, ctx, shown))),
    { runId: record.runId, approvalId: record.approvalId },
  );
}

/** The round as `ask` (the rule in force now) would have asked it; the call itself is unchanged. */
function askedAnew(record: ApprovalRecord, ask: AskDecision): ApprovalRecord {
  return {
    ...record,
    approvers: ask.approvers,
    quorum: ask.quorum > 1 ? ask.quorum : undefined,
    selfApproval: ask.selfApproval,
    rule: ask.rule?.label,
    grantOffer: ask.grant ?? undefined,
  };
}

const breakGlassText = (approvers: Parameters<typeof approversText>[0]) =>
  `${approversText(approvers)} may *Break glass* on the card (with a reason and an incident reference)`;

const frozenText = (freezes: readonly string[]) =>
  freezes.length > 0
    ? `A change freeze is in force (${freezes.map(escapeMrkdwn).join(', ')}): `
    : 'The rules changed with the time: ';

const askedText = (ask: AskDecision) =>
  `${ask.rule ? escapeMrkdwn(ask.rule.label) : "the tool's default"} now decides this call (${ask.quorum} approver${ask.quorum > 1 ? 's' : ''}). `;

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
