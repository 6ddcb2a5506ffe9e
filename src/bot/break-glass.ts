/**
 * Break glass on an approval card: the click opens a form asking for a reason and an incident reference;
 * its submission overrides the deny rule in force for this one call. Everything is checked again at the
 * submission (invariant 9), the moment that decides: the round is still pending and unexpired, the rule in
 * force then is a deny rule allowing break glass, the clicker is one of its break-glass approvers (users,
 * groups, on-call, resolved as for approvals), and the clicker is not the requester, whatever
 * selfApproval says. The decision is the approval's one compare-and-set (first decision wins, quorum 1),
 * so it is single-use: it approves this round's exact arguments only, never an edited or asked-again
 * round nor a later identical call. It is posted in the thread (and to the rule's audit channel) and its
 * audit entry is flagged for review.
 */
import { isApprover } from '../approvers/resolve.js';
import {
  type BreakGlassForm,
  breakGlassDecisionReason,
  breakGlassFormProblems,
  breakGlassInForce,
} from '../policy/break-glass.js';
import { breakGlassModal, parseBreakGlassSubmission } from '../slack/break-glass-modal.js';
import { escapeAndTruncate, escapeMrkdwn, userMention } from '../slack/mrkdwn.js';
import { type ApprovalRecord, isApprovalId } from '../store/index.js';
import { type ApprovalClick, type Card, closedText } from './approval-checks.js';
import { approvalClick, decide, tellClicker } from './approvals.js';
import { approversText } from './approvers.js';
import { channelAtClick } from './channel-at-click.js';
import type { BotContext } from './context.js';
import type { ClickTarget } from './slack-payloads.js';

type Available = Extract<ReturnType<typeof breakGlassInForce>, { kind: 'available' }>;

type BreakGlassCheck =
  | { ok: true; record: ApprovalRecord; card: Card; inForce: Available }
  | { ok: false; message: string };

const refuse = (message: string): BreakGlassCheck => ({ ok: false, message });

/** The checks of a Break glass click or submission, at `ctx.clock.now()`. */
async function checkBreakGlass(
  ctx: Pick<BotContext, 'store' | 'policy' | 'groups' | 'oncall' | 'clock' | 'slack' | 'channelFacts'>,
  click: ApprovalClick,
): Promise<BreakGlassCheck> {
  if (!isApprovalId(click.approvalId)) return refuse('This button does not carry a valid approval id.');
  const record = await ctx.store.approvals.get(click.approvalId);
  if (!record) return refuse('I cannot find this approval any more. Nothing was changed.');
  const card = record.card;
  if (!card) return refuse('This approval card is still being set up. Nothing was changed.');
  if (!click.fromHome && (card.channel !== click.channelId || card.ts !== click.messageTs)) {
    return refuse('This button does not belong to the approval card it was clicked on. Nothing was changed.');
  }
  const now = ctx.clock.now();
  const closed = closedText(record, now);
  if (closed) return refuse(closed);
  const tool = `\`${escapeMrkdwn(record.tool)}\``;
  const inForce = breakGlassInForce(ctx.policy, record, now);
  if (inForce.kind === 'not_denied') {
    return refuse(
      `No rule denies this ${tool} call now (a change freeze may have ended), so there is no glass to break. Nothing was changed.${record.breakGlass === 'only' ? ' Reject it; the model may ask for it again.' : ' Approve or reject it as usual.'}`,
    );
  }
  if (inForce.kind === 'not_allowed') {
    return refuse(
      `${escapeMrkdwn(inForce.rule)} denies this ${tool} call now and does not allow break glass. Nothing was changed.`,
    );
  }
  // Break glass overrides the deny rule only: a channel whose permissions refuse the tool now refuses it too.
  const channel = await channelAtClick(ctx, record, card.channel, 'approve');
  if (channel.kind === 'refused') return refuse(channel.message);
  if (click.userId === record.requester) {
    return refuse(
      'You asked for this run: nobody can break glass for their own call. Another of its break-glass approvers has to decide. Nothing was changed.',
    );
  }
  const verdict = await isApprover(inForce.approvers, click.userId, ctx);
  if (!verdict.ok) {
    return refuse(
      verdict.reason === 'lookup_failed'
        ? 'I could not check your user group membership with Slack just now. Nothing was changed; please try again in a moment.'
        : `You may not break glass on ${escapeMrkdwn(inForce.rule)}. It can be broken by ${approversText(inForce.approvers)}. Nothing was changed.`,
    );
  }
  return { ok: true, record, card, inForce };
}

/** Break glass clicked: after the checks, opens the form at once (the trigger_id lives about 3 s). */
export async function breakGlassClicked(ctx: BotContext, target: ClickTarget): Promise<void> {
  const check = await checkBreakGlass(ctx, approvalClick(target));
  if (!check.ok) return tellClicker(ctx, target, check.message);
  const { record, card, inForce } = check;
  try {
    await ctx.slack.openView(
      target.triggerId,
      breakGlassModal({
        approvalId: record.approvalId,
        channel: card.channel,
        messageTs: card.ts,
        tool: record.tool,
        rule: inForce.rule,
      }),
    );
  } catch (error) {
    ctx.logger.warn({ err: error, approvalId: record.approvalId }, 'could not open the break-glass form');
    await tellClicker(
      ctx,
      target,
      'Slack did not let me open the form in time. Please click Break glass again.',
    );
  }
}

/** What the form shows after a submission: field errors, a notice instead of the form, or nothing (closed). */
type BreakGlassAnswer = { errors: Record<string, string> } | { notice: string } | null;

/** The form was submitted: check the fields, check everything again, decide, announce. */
export async function breakGlassSubmitted(
  ctx: BotContext,
  userId: string,
  view: unknown,
): Promise<BreakGlassAnswer> {
  const submitted = parseBreakGlassSubmission(view);
  const form = breakGlassFormProblems(submitted);
  if (!form.ok) return { errors: form.errors };
  const click = {
    approvalId: submitted.approvalId,
    userId,
    channelId: submitted.channel,
    messageTs: submitted.messageTs,
  };
  const check = await checkBreakGlass(ctx, click);
  if (!check.ok) return { notice: check.message };
  const { record, card, inForce } = check;
  const decider = { channel: card.channel, user: userId };
  // Quorum 1: breaking glass is one named person's decision, whatever the ask before it needed.
  const outcome = await decide(ctx, record, 'approved', decider, breakGlassDecisionReason(form.form), 1, {
    incident: form.form.incident,
  });
  if (!outcome.recorded) return { notice: outcome.message };
  ctx.logger.warn(
    {
      runId: record.runId,
      approvalId: record.approvalId,
      by: userId,
      rule: inForce.rule,
      incident: form.form.incident,
    },
    'glass broken: a deny rule overridden for one call',
  );
  announce(ctx, record, card, inForce, userId, form.form);
  return null;
}

/** Posts the override in the call's thread and, when the rule names one, in its audit channel. */
function announce(
  ctx: BotContext,
  record: ApprovalRecord,
  card: Card,
  inForce: Available,
  by: string,
  form: BreakGlassForm,
): void {
  const fields = { runId: record.runId, approvalId: record.approvalId };
  ctx.background.run(
    'announce break glass',
    async () => {
      const run = await ctx.store.runs.loadRun(record.runId);
      const text = announcement(record, inForce, by, form);
      await ctx.slack.postMessage(card.channel, text, run?.slack.threadTs ?? card.ts);
      if (inForce.auditChannel) {
        const link = await ctx.slack.permalink(card.channel, card.ts);
        await ctx.slack.postMessage(inForce.auditChannel, `${text}${link ? `\n<${link}|The card>` : ''}`);
      }
    },
    fields,
  );
}

/** The announcement, as people read it. */
function announcement(
  record: Pick<ApprovalRecord, 'tool' | 'requester' | 'runId'>,
  inForce: Pick<Available, 'rule' | 'freezes'>,
  by: string,
  form: BreakGlassForm,
): string {
  const freezes =
    inForce.freezes.length > 0
      ? ` during the change freeze ${inForce.freezes.map(escapeMrkdwn).join(', ')}`
      : '';
  return [
    `:rotating_light: *Break glass:* ${userMention(by)} overrode ${escapeMrkdwn(inForce.rule)}${freezes} for one \`${escapeMrkdwn(record.tool)}\` call asked by ${userMention(record.requester)} (run \`${record.runId}\`). It runs once; the audit entry is flagged for review.`,
    `*Incident:* ${escapeAndTruncate(form.incident, 200)}`,
    `*Reason:* ${escapeAndTruncate(form.reason, 1_500)}`,
  ].join('\n');
}
