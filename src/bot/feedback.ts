/**
 * Clicks on the feedback buttons under an answer (final-answer.ts `feedbackBlock`): the first click of a
 * person on a run is recorded (run, person, value, time, channel) and counted in the metrics, then a
 * modal asks for an optional comment, stored with it. Later clicks by the same person on the same run
 * (the other button, a double click, Slack's duplicate deliveries) change nothing and say so.
 */
import { feedbackCommentModal, parseFeedbackSubmission } from '../slack/feedback-modal.js';
import { parseFeedbackValue } from '../slack/final-answer.js';
import { isRunId, StoreError } from '../store/index.js';
import type { BotContext } from './context.js';
import type { ClickTarget } from './slack-payloads.js';

type FeedbackOutcome = 'recorded' | 'already_given' | 'unknown_run' | 'other_conversation' | 'unreadable';

const GONE_TEXT =
  'I cannot record feedback on this answer any more (finished runs are kept for a limited time).';

export async function feedbackClicked(ctx: BotContext, target: ClickTarget): Promise<FeedbackOutcome> {
  const tell = (text: string) =>
    target.channelId
      ? ctx.slack.ephemeral(
          { channel: target.channelId, user: target.userId, threadTs: target.threadTs },
          text,
        )
      : Promise.resolve();
  const parsed = parseFeedbackValue(target.value);
  if (!parsed || !isRunId(parsed.runId)) {
    ctx.logger.warn({ value: target.value, user: target.userId }, 'unreadable feedback button value');
    return 'unreadable';
  }
  const { runId, value } = parsed;
  const run = await ctx.store.runs.loadRun(runId);
  if (!run) {
    await tell(GONE_TEXT);
    return 'unknown_run';
  }
  if (target.channelId && run.slack.channelId !== target.channelId) {
    await tell(
      'These feedback buttons belong to an answer of another conversation, so the click was ignored.',
    );
    return 'other_conversation';
  }
  const { recorded, record } = await ctx.store.feedback.record({
    runId,
    userId: target.userId,
    value,
    at: ctx.clock.now(),
    channelId: run.slack.channelId,
  });
  if (!recorded) {
    const given = record.value === 'good' ? ':thumbsup:' : ':thumbsdown:';
    await tell(`You already gave feedback on this answer (${given}); the first one counts.`);
    return 'already_given';
  }
  ctx.metrics?.feedback.inc({ value });
  ctx.logger.info({ runId, user: target.userId, value }, 'feedback recorded');
  // The click is recorded whatever happens to the modal (the trigger may have expired).
  await ctx.slack
    .openView(target.triggerId, feedbackCommentModal(runId, value))
    .catch((err: unknown) => ctx.logger.warn({ err, runId }, 'feedback comment modal not opened'));
  return 'recorded';
}

/** A submitted comment; returns a problem to show in the modal, or null. */
export async function feedbackSubmitted(
  ctx: BotContext,
  userId: string,
  view: unknown,
): Promise<string | null> {
  const { runId, comment } = parseFeedbackSubmission(view);
  if (comment === undefined || !isRunId(runId)) return null;
  try {
    await ctx.store.feedback.comment(runId, userId, comment, ctx.clock.now());
    ctx.logger.info({ runId, user: userId }, 'feedback comment recorded');
    return null;
  } catch (error) {
    if (error instanceof StoreError && (error.code === 'not_found' || error.code === 'no_feedback'))
      return GONE_TEXT;
    throw error;
  }
}
