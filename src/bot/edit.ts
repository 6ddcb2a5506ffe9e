/**
 * Edit before approval. An approver presses Edit on a pending card: a form built from the tool's schema
 * opens with the current arguments. On submission the edited arguments are checked against the schema (a
 * clear error in the form), then against the policy's rules as a new call: a deny rule refuses them in the
 * form; otherwise they become the approval's next round (their own hash), asked of whom the rules name for
 * them, and the card shows them as a diff against the model's original, "edited by @x".
 *
 * Editing counts as the editor's approval of the edited call when those rules let the editor approve it
 * (one of its approvers, and not the requester unless self-approval is allowed): with quorum 1 the edited
 * call is approved at once and runs; with a larger quorum the editor's approval counts as one of them. An
 * editor the rules for the edited call do not name only proposes it: it waits for those who may decide.
 * An `allow` rule for the edited arguments approves them as it would the model's.
 */

import { argsHash } from '../loop/hash.js';
import { withChannelApprovers } from '../policy/channel-rules.js';
import { checkEditedArgs } from '../policy/edited-args.js';
import type { AskDecision } from '../policy/gate.js';
import { decideGate } from '../policy/gate.js';
import { addApprovalTimers } from '../queue/approval-timers.js';
import { approvalCard } from '../slack/approval-card.js';
import { approvalViewFromRecord } from '../slack/approval-view.js';
import {
  blockOfPath,
  editModal,
  editSubmissionMeta,
  formCanHold,
  parseEditSubmission,
} from '../slack/edit-modal.js';
import { type ApprovalRecord, nextRoundOf, StoreError } from '../store/index.js';
import { type ApprovalClick, checkApprovalClick } from './approval-checks.js';
import { approvalClick } from './approvals.js';
import { approversText, mayDecide } from './approvers.js';
import { channelScopeNow } from './channel-at-click.js';
import type { BotContext } from './context.js';
import type { ClickTarget } from './slack-payloads.js';
import { unconfirmedDecisionText } from './unconfirmed-decision.js';

/** What the form shows after a submission: field errors, a notice instead of the form, or nothing (closed). */
type EditAnswer = { errors: Record<string, string> } | { notice: string } | null;

const MAX_FORM_JSON = 3_000;

/** Edit clicked: the same checks as Approve, then the form (inside the click: trigger_id lives ~3 s). */
export async function editClicked(
  ctx: BotContext,
  target: ClickTarget,
  tell: (text: string) => Promise<void>,
): Promise<void> {
  const click: ApprovalClick = approvalClick(target);
  const check = await checkApprovalClick(ctx, click, 'approve');
  if (!check.ok) return tell(check.message.replace('You may not approve', 'You may not edit'));
  const { record, card } = check;
  if (!record.schema)
    return tell(
      `\`${record.tool}\` calls cannot be edited here (its schema was not kept). Nothing was changed.`,
    );
  if (JSON.stringify(record.args).length > MAX_FORM_JSON * 4 || !formCanHold(record.schema, record.args)) {
    return tell('These arguments are too large to edit in a form. Reject the call and ask for another.');
  }
  try {
    await ctx.slack.openView(
      target.triggerId,
      editModal({
        approvalId: record.approvalId,
        channel: card.channel,
        messageTs: card.ts,
        tool: record.tool,
        schema: record.schema,
        args: record.args,
      }),
    );
  } catch (error) {
    ctx.logger.warn({ err: error, approvalId: record.approvalId }, 'could not open the edit modal');
    await tell('Slack did not let me open the edit form in time. Please click Edit again.');
  }
}

/** The next round for the edited arguments, as the rules ask for them; null when a deny rule refuses them. */
async function nextRound(
  ctx: BotContext,
  record: ApprovalRecord,
  editor: string,
  args: unknown,
  argsHash: string,
): Promise<{ next: ApprovalRecord } | { denied: string }> {
  const now = ctx.clock.now();
  // An edited round is asked of the channel's approvers too (per-channel permissions).
  const channel = record.card ? await channelScopeNow(ctx, record.card.channel) : null;
  const decision = withChannelApprovers(decideGate(ctx.policy, record.tool, args, now), channel);
  if (decision.kind === 'deny') return { denied: `${decision.rule.label}: ${decision.reason}` };
  const base: ApprovalRecord = {
    ...record,
    approvalId: nextRoundOf(record.approvalId),
    args,
    argsHash,
    // The tool's preview described the model's arguments; the card shows the edited ones and the diff.
    preview: null,
    // So did its plan: the worker plans the edited arguments and asks again with that plan before they run.
    plan: undefined,
    replanOf: undefined,
    createdAt: now,
    status: 'pending',
    decidedBy: null,
    decidedAt: null,
    decisionReason: null,
    card: null,
    original: record.original ?? { args: record.args, argsHash: record.argsHash },
    editedBy: editor,
    editOf: record.approvalId,
    editedTo: undefined,
    votes: undefined,
    via: undefined,
    // Asked afresh: the edited round's people, expiry, reminders and escalation are its own rule's.
    escalation: undefined,
    escalatedAt: undefined,
    remindAtPercent: undefined,
    grantOffer: undefined,
    quorum: undefined,
  };
  if (decision.kind === 'allow') {
    return {
      next: {
        ...base,
        rule: decision.rule.label,
        status: 'approved',
        via: 'rule',
        decidedAt: now,
        decisionReason: `allowed by ${decision.rule.label} (edited by <@${editor}>)`,
      },
    };
  }
  return { next: await asked(ctx, base, decision, editor, now) };
}

async function asked(
  ctx: BotContext,
  base: ApprovalRecord,
  ask: AskDecision,
  editor: string,
  now: number,
): Promise<ApprovalRecord> {
  const round: ApprovalRecord = {
    ...base,
    approvers: ask.approvers,
    rule: ask.rule?.label,
    approversFrom: ask.approversFrom,
    quorum: ask.quorum > 1 ? ask.quorum : undefined,
    selfApproval: ask.selfApproval,
    grantOffer: ask.grant ?? undefined,
    expiresAt: now + ask.expiresAfterMs,
    remindAtPercent: ask.remindAtPercent.length > 0 ? [...ask.remindAtPercent] : undefined,
    escalation: ask.escalation ?? undefined,
  };
  const verdict = await mayDecide(ctx.policy, round, editor, 'approve', ctx);
  if (!verdict.ok) return round;
  if (ask.quorum > 1) return { ...round, votes: [{ by: editor, at: now }] };
  return {
    ...round,
    status: 'approved',
    decidedBy: editor,
    decidedAt: now,
    decisionReason: 'approved as edited',
  };
}

const storeRefusal: Record<string, string> = {
  not_pending: 'This approval was decided or edited meanwhile; nothing was changed. See the card.',
  edited_already: 'Someone else edited these arguments first; nothing was changed. See the card.',
  expired: 'This approval expired before your edit arrived; nothing was changed.',
  run_ended: 'The run has already ended, so the edited call would not run. Nothing was changed.',
  not_found: 'I cannot find this approval any more. Nothing was changed.',
};

/** Where the card sits in Slack. */
interface CardAt {
  channel: string;
  ts: string;
}

/** Each schema problem under the form block of its argument; several on one block are joined. */
function errorsByBlock(
  schema: Record<string, unknown>,
  problems: ReadonlyArray<{ pointer: string; message: string }>,
): Record<string, string> {
  const errors: Record<string, string> = {};
  for (const p of problems) {
    const block = blockOfPath(schema, p.pointer);
    errors[block] = errors[block] ? `${errors[block]}; ${p.message}` : p.message;
  }
  return errors;
}

/** Stores the edited round; a notice for the editor instead when the store refuses it. */
async function storeEdit(
  ctx: BotContext,
  record: ApprovalRecord,
  userId: string,
  card: CardAt,
  next: ApprovalRecord,
): Promise<{ next: ApprovalRecord } | { notice: string }> {
  const permalink = await ctx.slack.permalink(card.channel, card.ts);
  try {
    return {
      next: await ctx.store.approvals.edit({
        approvalId: record.approvalId,
        editedBy: userId,
        now: ctx.clock.now(),
        next,
        ...(permalink ? { permalink } : {}),
      }),
    };
  } catch (error) {
    if (error instanceof StoreError && storeRefusal[error.code])
      return { notice: storeRefusal[error.code] ?? '' };
    const unconfirmed = unconfirmedDecisionText(error);
    if (unconfirmed) return { notice: unconfirmed };
    throw error;
  }
}

/** What the editor is told when the edited round still waits for approvals. */
function waitingText(next: ApprovalRecord, userId: string): string {
  const counted = (next.votes ?? []).some((v) => v.by === userId);
  if (counted) {
    return `Your edit is recorded and counts as your approval (${next.votes?.length ?? 0} of ${next.quorum ?? 1}); the edited call runs once enough approvers approve it.`;
  }
  return `Your edit is recorded. The edited call now waits for ${approversText(next.approvers)}${next.rule ? ` (${next.rule})` : ''}.`;
}

/** The edited round is stored: its timers, the card redrawn, and the call resumed or the editor told. */
async function afterEdit(
  ctx: BotContext,
  record: ApprovalRecord,
  next: ApprovalRecord,
  card: CardAt,
  userId: string,
  onApproved: (record: ApprovalRecord, decider: { channel: string; user: string }) => void,
): Promise<void> {
  ctx.logger.info(
    { runId: record.runId, approvalId: next.approvalId, editOf: record.approvalId, status: next.status },
    'approval edited',
  );
  // The round's own timers (the edited round's expiry, reminders and escalation); the edited round's
  // expiry timer adds them again should this fail.
  if (next.status === 'pending') {
    await addApprovalTimers(
      ctx.queue,
      next,
      ctx.clock.now(),
      ctx.policy.approvals.oncallCacheSeconds * 1_000,
    ).catch((err: unknown) =>
      ctx.logger.warn({ err, approvalId: next.approvalId }, 'could not add the edited round timers'),
    );
  }
  ctx.background.run(
    'redraw the edited card',
    () => ctx.slack.updateMessage(card.channel, card.ts, approvalCard(approvalViewFromRecord(next))),
    { runId: record.runId, approvalId: next.approvalId },
  );
  const decider = { channel: card.channel, user: userId };
  if (next.status === 'approved') onApproved(next, decider);
  else await ctx.slack.ephemeral(decider, waitingText(next, userId));
}

/** The Edit form was submitted: check, record the next round, redraw the card, resume when approved. */
export async function editSubmitted(
  ctx: BotContext,
  userId: string,
  view: unknown,
  onApproved: (record: ApprovalRecord, decider: { channel: string; user: string }) => void,
): Promise<EditAnswer> {
  const meta = editSubmissionMeta(view);
  const click = { approvalId: meta.approvalId, userId, channelId: meta.channel, messageTs: meta.messageTs };
  const check = await checkApprovalClick(ctx, click, 'approve');
  if (!check.ok) return { notice: check.message };
  const { record, card } = check;
  const schema = record.schema ?? {};
  const form = parseEditSubmission(view, schema, record.args);
  if (!form.ok) return { errors: form.errors };
  const first = blockOfPath(schema, '');
  // Compared before the schema fills in defaults: a form sent back as it was opened changes nothing.
  if (argsHash(form.args) === argsHash(record.args)) return { errors: { [first]: 'Nothing was changed.' } };
  const checked = checkEditedArgs(schema, form.args);
  if (!checked.ok) return { errors: errorsByBlock(schema, checked.problems) };
  if (checked.argsHash === record.argsHash) return { errors: { [first]: 'Nothing was changed.' } };
  const planned = await nextRound(ctx, record, userId, checked.args, checked.argsHash);
  if ('denied' in planned) {
    return { errors: { [first]: `Denied by ${planned.denied}. Change the arguments, or Reject the call.` } };
  }
  const stored = await storeEdit(ctx, record, userId, card, planned.next);
  if ('notice' in stored) return stored;
  await afterEdit(ctx, record, stored.next, card, userId, onApproved);
  return null;
}
