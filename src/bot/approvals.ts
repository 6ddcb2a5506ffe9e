/**
 * Decisions on approval cards: Approve, Reject (a modal asks for a reason, then its submission decides),
 * and "Approve again" on an outcome_unknown card. Every path runs the same server-side checks
 * (approval-checks.ts); a decision is recorded by compare-and-set (first decision wins, audited), then
 * the run gets a `resume` job whose id is the approval id, so double clicks, two approvers at once and
 * Slack's retries execute nothing twice. The card is then redrawn in place with the outcome.
 */
import { ZodError } from 'zod';
import { LoopgateError } from '../loop/errors.js';
import { addRunJob } from '../queue/index.js';
import { approvalCard } from '../slack/approval-card.js';
import { approvalViewFromRecord } from '../slack/approval-view.js';
import { slackDate, userMention } from '../slack/mrkdwn.js';
import { parseRejectReasonSubmission, rejectReasonModal } from '../slack/reject-reason-modal.js';
import { type ApprovalDecision, type ApprovalRecord, type DecideResult, StoreError } from '../store/index.js';
import { type ApprovalClick, checkApprovalClick, checkCardClick, closedText } from './approval-checks.js';
import type { BotContext } from './context.js';
import { homeOpened } from './home.js';
import { withRetries } from './retry.js';
import type { EphemeralTarget } from './slack-calls.js';
import type { ClickTarget } from './slack-payloads.js';
import { unconfirmedDecisionText } from './unconfirmed-decision.js';

export function approvalClick(target: ClickTarget): ApprovalClick {
  return {
    approvalId: target.value,
    userId: target.userId,
    channelId: target.channelId,
    messageTs: target.messageTs,
    fromHome: target.fromHome,
  };
}

/**
 * An ephemeral note to the clicker next to the card. A click in App Home publishes the home again, the
 * note at its top (and the list as it is now); other clicks outside a conversation are only logged.
 */
export async function tellClicker(ctx: BotContext, target: ClickTarget, text: string): Promise<void> {
  if (target.fromHome && target.teamId) {
    await homeOpened(ctx, target.teamId, target.userId, text);
    return;
  }
  if (!target.channelId) {
    ctx.logger.warn({ user: target.userId, note: text }, 'click outside a conversation: nowhere to answer');
    return;
  }
  await ctx.slack.ephemeral(
    { channel: target.channelId, user: target.userId, threadTs: target.threadTs },
    text,
  );
}

/** `note`: what the decider is told although their decision counted (a quorum still short). */
type Outcome = { recorded: true; note?: string } | { recorded: false; message: string };

/**
 * Records `decision` (first decision wins). When this decision won, the run's resume is queued (retried
 * while Redis fails; the decider is told if it never goes through). The card is redrawn whenever the
 * record changed (also when the click came too late and expired the approval). `quorumInForce`: the
 * quorum of the rule in force at the click, when a change freeze changed it since the card was posted.
 */
export async function decide(
  ctx: BotContext,
  record: ApprovalRecord,
  decision: Extract<ApprovalDecision, 'approved' | 'rejected'>,
  decider: EphemeralTarget,
  reason?: string,
  quorumInForce?: number,
  breakGlass?: { incident: string },
): Promise<Outcome> {
  const card = record.card;
  const permalink = card ? await ctx.slack.permalink(card.channel, card.ts) : undefined;
  let result: DecideResult;
  try {
    result = await ctx.store.approvals.decide({
      approvalId: record.approvalId,
      decision,
      decidedBy: decider.user,
      ...(reason ? { reason } : {}),
      now: ctx.clock.now(),
      ...(permalink ? { permalink } : {}),
      ...(quorumInForce === undefined ? {} : { quorum: quorumInForce }),
      ...(breakGlass ? { breakGlass } : {}),
    });
  } catch (error) {
    if (error instanceof StoreError && error.code === 'run_ended') {
      return { recorded: false, message: runEndedText(record) };
    }
    const unconfirmed = unconfirmedDecisionText(error);
    if (unconfirmed) return { recorded: false, message: unconfirmed };
    throw error;
  }
  // Votes are counted against the quorum in force: the card and the notes show that one.
  const inForce = quorumInForce === undefined ? undefined : { quorum: quorumInForce };
  if (inForce) result = { ...result, record: { ...result.record, ...inForce } };
  if (result.changed || result.vote === 'counted') redrawCard(ctx, result.record, inForce);
  if (result.vote === 'repeated') return { recorded: false, message: repeatedVoteText(result.record) };
  if (result.vote === 'counted' && !result.won) {
    ctx.logger.info(
      {
        runId: record.runId,
        approvalId: record.approvalId,
        decidedBy: decider.user,
        votes: result.record.votes?.length,
      },
      'approval counted towards its quorum',
    );
    return { recorded: true, note: votedText(result.record) };
  }
  if (!result.won) {
    return {
      recorded: false,
      message: closedText(result.record, ctx.clock.now()) ?? 'This approval was already decided.',
    };
  }
  ctx.logger.info(
    { runId: record.runId, approvalId: record.approvalId, decision, decidedBy: decider.user },
    'approval decided',
  );
  ctx.metrics?.approvalsDecided.inc({ decision });
  ctx.metrics?.timeToDecision.observe({ decision }, Math.max(0, ctx.clock.now() - record.createdAt) / 1000);
  queueResume(ctx, result.record, decider, permalink);
  return { recorded: true };
}

/** Queues the run's resume job for a decided approval (retried while Redis fails; the decider told if never). */
export function queueResume(
  ctx: BotContext,
  record: ApprovalRecord,
  decider: EphemeralTarget,
  permalink?: string,
): void {
  const fields = { runId: record.runId, approvalId: record.approvalId };
  ctx.background.run(
    'queue resume job',
    async () => {
      const span = await decisionSpan(ctx, record, decider.user, permalink);
      const job = {
        name: 'resume',
        data: {
          v: 1,
          runId: record.runId,
          approvalId: record.approvalId,
          ...(span && ctx.telemetry ? { trace: ctx.telemetry.carrierOf(span) } : {}),
        },
      } as const;
      try {
        const add = () => addRunJob(ctx.queue, job);
        const send = () =>
          ctx.telemetry
            ? ctx.telemetry.queueSend(
                { queue: ctx.queue.name, job: job.name, runId: record.runId },
                span,
                add,
              )
            : add();
        await withRetries(send, {
          delaysMs: ctx.enqueueRetryDelaysMs,
          retryable: (err) => !(err instanceof ZodError),
          onRetry: (err, retry) =>
            ctx.logger.warn({ ...fields, err, retry }, 'could not queue the resume job; retrying'),
        });
      } catch (err) {
        ctx.logger.error({ ...fields, err }, 'decision recorded but the resume job could not be queued');
        span?.setAttribute('error.type', 'queue_unreachable');
        await ctx.slack.ephemeral(decider, notResumedText(record));
      } finally {
        span?.end();
      }
    },
    fields,
  );
}

/**
 * The decision's span, in the run's trace (the context recorded on the run): who was asked, who decided,
 * how long the card waited. Null when tracing is off; a failure to read the context leaves a span of its
 * own trace rather than none.
 */
async function decisionSpan(ctx: BotContext, record: ApprovalRecord, by: string, permalink?: string) {
  if (!ctx.telemetry) return null;
  const traceparent = await ctx.store.runs.traceParent(record.runId).catch(() => null);
  const now = ctx.clock.now();
  return ctx.telemetry.startSpan(
    `approval.decide ${record.tool}`,
    {
      'loopgate.run.id': record.runId,
      'loopgate.approval.id': record.approvalId,
      'gen_ai.tool.name': record.tool,
      'loopgate.approval.requested_by': record.requester,
      'loopgate.approval.asked': [...record.approvers.users, ...record.approvers.groups],
      'loopgate.approval.decided_by': by,
      'loopgate.approval.decision': record.status,
      'loopgate.approval.wait_ms': Math.max(0, (record.decidedAt ?? now) - record.createdAt),
      ...(permalink ? { 'slack.message.permalink': permalink } : {}),
    },
    traceparent ? { traceparent } : undefined,
  );
}

/**
 * Redraws the card from the record as stored when the update is sent: quorum votes landing together each
 * redraw, and the freshest record keeps a slower, older redraw from bringing back buttons already gone.
 */
function redrawCard(ctx: BotContext, record: ApprovalRecord, inForce?: { quorum: number }): void {
  const card = record.card;
  if (!card) return;
  ctx.background.run(
    'update approval card',
    async () => {
      // The latest round: a worker that found the plan changed may have asked again on this card already.
      const fresh = (await ctx.store.approvals.latest(record.approvalId)) ?? record;
      const shown = inForce && fresh.approvalId === record.approvalId ? { ...fresh, ...inForce } : fresh;
      await ctx.slack.updateMessage(card.channel, card.ts, approvalCard(approvalViewFromRecord(shown)));
    },
    { runId: record.runId, approvalId: record.approvalId },
  );
}

/** `1 of 2 (<@U1>)`: the quorum's progress. */
function progressText(record: ApprovalRecord): string {
  const votes = record.votes ?? [];
  const who = votes.map((v) => userMention(v.by)).join(', ');
  return `${votes.length} of ${record.quorum ?? 1}${who ? ` (${who})` : ''}`;
}

const votedText = (record: ApprovalRecord) => {
  const left = (record.quorum ?? 1) - (record.votes?.length ?? 0);
  return `Your approval is recorded: ${progressText(record)}. \`${record.tool}\` runs once ${left} more approver${left === 1 ? '' : 's'} approve${left === 1 ? 's' : ''}; nothing has run yet.`;
};

/** Running a call again needs the quorum its first run needed: the clicker is told how far it is. */
const againVotedText = (record: ApprovalRecord) => {
  const left = (record.quorum ?? 1) - (record.votes?.length ?? 0);
  return `Your approval to run \`${record.tool}\` again is recorded: ${progressText(record)}. Like its first run, it needs ${record.quorum ?? 1} different approvers: it runs again once ${left} more approve${left === 1 ? 's' : ''} it again (with Approve again, ${slackDate(record.expiresAt)} at the latest); nothing has run yet.`;
};

const repeatedVoteText = (record: ApprovalRecord) =>
  `You have already approved this (${progressText(record)}). It needs ${record.quorum ?? 1} different approvers; nothing more was changed.`;

/** Approve again keeps its round's quorum: a freeze asking more people since refuses it instead. */
const moreApproversNowText = (record: ApprovalRecord, quorum: number) =>
  `The rule in force now (a change freeze) asks ${quorum} approvers for \`${record.tool}\`, more than this call was approved with, so it cannot be approved again from this card. Nothing was changed; ask for the call again.`;

const runEndedText = (record: ApprovalRecord) =>
  `Run \`${record.runId}\` has already ended (cancelled, failed or finished), so this \`${record.tool}\` call will not run. Your decision was not recorded.`;

const notResumedText = (record: ApprovalRecord) =>
  `Your decision is recorded, but I could not hand run \`${record.runId}\` back to a worker (the queue is unavailable). Please tell an operator.`;

/** Approve clicked: check, decide, resume. Anything refused is explained to the clicker only. */
export async function approveClicked(ctx: BotContext, target: ClickTarget): Promise<void> {
  const check = await checkApprovalClick(ctx, approvalClick(target), 'approve');
  if (!check.ok) return tellClicker(ctx, target, check.message);
  const decider = { channel: check.card.channel, user: target.userId, threadTs: target.threadTs };
  const outcome = await decide(ctx, check.record, 'approved', decider, undefined, check.quorumInForce);
  if (!outcome.recorded) return tellClicker(ctx, target, outcome.message);
  if (outcome.note) return tellClicker(ctx, target, outcome.note);
  if (target.fromHome) return tellClicker(ctx, target, `Approved \`${check.record.tool}\`.`);
}

/**
 * Reject clicked: after the same checks, opens the reason modal at once (the click's trigger_id lives
 * about 3 s). The decision is taken when the modal is submitted.
 */
export async function rejectClicked(ctx: BotContext, target: ClickTarget): Promise<void> {
  const check = await checkApprovalClick(ctx, approvalClick(target), 'reject');
  if (!check.ok) return tellClicker(ctx, target, check.message);
  const { record, card } = check;
  try {
    await ctx.slack.openView(
      target.triggerId,
      rejectReasonModal({
        approvalId: record.approvalId,
        channel: card.channel,
        messageTs: card.ts,
        tool: record.tool,
      }),
    );
  } catch (error) {
    ctx.logger.warn({ err: error, approvalId: record.approvalId }, 'could not open the reject-reason modal');
    await tellClicker(
      ctx,
      target,
      'Slack did not let me open the reason form in time. Please click Reject again.',
    );
  }
}

/**
 * The reject-reason modal was submitted. Checks again (time passed since the click), decides, resumes.
 * Returns the text to show in the modal when nothing was recorded, or null to close it.
 */
export async function rejectSubmitted(
  ctx: BotContext,
  userId: string,
  view: unknown,
): Promise<string | null> {
  const submitted = parseRejectReasonSubmission(view);
  const click: ApprovalClick = {
    approvalId: submitted.approvalId,
    userId,
    channelId: submitted.channel,
    messageTs: submitted.messageTs,
  };
  const check = await checkApprovalClick(ctx, click, 'reject');
  if (!check.ok) return check.message;
  // The card's thread is not known here: a failure to resume is told in the channel.
  const decider = { channel: check.card.channel, user: userId };
  const outcome = await decide(ctx, check.record, 'rejected', decider, submitted.reason);
  return outcome.recorded ? null : outcome.message;
}

/**
 * "Approve again" on an outcome_unknown card, or "Retry" on the card of a call that failed transiently
 * and was not repeated (the same guarded path): a fresh approval of the same call by someone who may approve
 * it (the requester only where self-approval is allowed), with the quorum its first run needed. The store
 * creates the call's next approval round, approved by this click (quorum 1, the first click wins) or by the
 * last of the distinct approvers it needs, and its resume job runs the call once more. The card showed the
 * exact arguments and Slack asked the clicker to confirm, so the click is the informed decision.
 */
export async function reapproveClicked(ctx: BotContext, target: ClickTarget): Promise<void> {
  const check = await checkCardClick(ctx, approvalClick(target), 'approve');
  if (!check.ok) return tellClicker(ctx, target, check.message);
  const { record, card } = check;
  if ((check.quorumInForce ?? 1) > (check.quorumAsked ?? 1)) {
    return tellClicker(ctx, target, moreApproversNowText(record, check.quorumInForce ?? 1));
  }
  const permalink = await ctx.slack.permalink(card.channel, card.ts);
  let again: Awaited<ReturnType<typeof ctx.store.approvals.reapprove>>;
  try {
    again = await ctx.store.approvals.reapprove({
      approvalId: record.approvalId,
      decidedBy: target.userId,
      now: ctx.clock.now(),
      ...(permalink ? { permalink } : {}),
    });
  } catch (error) {
    if (error instanceof StoreError && error.code === 'not_unknown') {
      return tellClicker(
        ctx,
        target,
        `This \`${record.tool}\` call has neither an unknown outcome nor a failure worth retrying (it never started, or its result is recorded), so there is nothing to approve again or retry. Nothing was changed.`,
      );
    }
    const unconfirmed = unconfirmedDecisionText(error);
    if (unconfirmed) return tellClicker(ctx, target, unconfirmed);
    throw error;
  }
  if (again.vote === 'counted' && !again.won) {
    ctx.logger.info(
      { runId: record.runId, approvalId: again.record.approvalId, decidedBy: target.userId },
      'approval again counted towards its quorum',
    );
    return tellClicker(ctx, target, againVotedText(again.record));
  }
  if (again.vote === 'repeated') {
    return tellClicker(
      ctx,
      target,
      `You have already approved running this again (${progressText(again.record)}). It needs ${again.record.quorum ?? 1} different approvers; nothing more was changed.`,
    );
  }
  if (!again.won) {
    const { decidedBy, decidedAt } = again.record;
    const who = decidedBy ? ` by ${userMention(decidedBy)}` : '';
    const when = decidedAt === null ? '' : ` ${slackDate(decidedAt)}`;
    return tellClicker(
      ctx,
      target,
      `This was already approved again${who}${when}. Nothing more was changed.`,
    );
  }
  ctx.logger.info(
    { runId: record.runId, approvalId: again.record.approvalId, decidedBy: target.userId },
    'approved again after an unknown outcome',
  );
  ctx.metrics?.approvalsDecided.inc({ decision: 'approved' });
  const decider = { channel: card.channel, user: target.userId, threadTs: target.threadTs };
  const fields = { runId: record.runId, approvalId: again.record.approvalId };
  // Redrawn before the resume is queued: the worker's later redraw, which adds the result, is the last.
  ctx.background.run(
    'update approval card, then queue the run again',
    async () => {
      await ctx.slack
        .updateMessage(card.channel, card.ts, approvalCard(approvalViewFromRecord(again.record)))
        .catch((err: unknown) => ctx.logger.warn({ ...fields, err }, 'could not redraw the approval card'));
      queueResume(ctx, again.record, decider);
    },
    fields,
  );
}

/**
 * A click handler whose failure means its decision was not stored (Redis unavailable, most often): the
 * decision is written last, and everything after it runs in the background. The clicker is told the
 * decision was not recorded and may click again; the card is left as it was, never redrawn as decided.
 */
export function toldWhenNotRecorded(
  handle: (ctx: BotContext, target: ClickTarget) => Promise<void>,
): (ctx: BotContext, target: ClickTarget) => Promise<void> {
  return async (ctx, target) => {
    try {
      await handle(ctx, target);
    } catch (error) {
      ctx.logger.error({ err: error, user: target.userId, value: target.value }, 'decision not recorded');
      await tellClicker(ctx, target, decisionNotRecordedText(error));
    }
  };
}

/** What the decider is told when recording their decision failed. */
export function decisionNotRecordedText(error: unknown): string {
  const why = error instanceof LoopgateError ? error.message : 'the approval store is unavailable';
  return `Your decision was not recorded (${why}); nothing was changed. Please try again in a moment.`;
}
