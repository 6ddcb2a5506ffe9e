/**
 * The Details button (on approval cards and final answers; its value is the run id) opens the run's trace:
 * steps, tool calls, arguments, durations, results and approvals, built from the stored run and the
 * durations its trace recorded.
 */
import { traceTree } from '../agents/trace-tree.js';
import { approvalViewFromRecord } from '../slack/approval-view.js';
import { fullTextModal } from '../slack/full-text-modal.js';
import type { TraceFeedback } from '../slack/trace.js';
import { traceModal } from '../slack/trace-modal.js';
import type { FeedbackRecord } from '../store/feedback/feedback-store.js';
import { isApprovalId, isRunId } from '../store/index.js';
import type { BotContext } from './context.js';
import type { ClickTarget } from './slack-payloads.js';

/** Feedback as the trace shows it. */
const feedbackOfTrace = (records: readonly FeedbackRecord[]): TraceFeedback[] =>
  records.map((r) => ({
    userId: r.userId,
    value: r.value,
    at: r.at,
    ...(r.comment ? { comment: r.comment } : {}),
  }));

/**
 * Opens the trace modal of the run named by the button. A run that is gone, or a button whose run lives in
 * another conversation than the click, gets an ephemeral note instead.
 */
const tellClicker = (ctx: BotContext, target: ClickTarget, text: string) =>
  target.channelId
    ? ctx.slack.ephemeral({ channel: target.channelId, user: target.userId, threadTs: target.threadTs }, text)
    : Promise.resolve();

export async function detailsClicked(ctx: BotContext, target: ClickTarget): Promise<void> {
  const tell = (text: string) => tellClicker(ctx, target, text);
  const runId = target.value;
  const run = isRunId(runId) ? await ctx.store.runs.loadRun(runId) : null;
  if (!run) return tell('I cannot find this run any more (finished runs are kept for a limited time).');
  if (target.channelId && run.slack.channelId !== target.channelId) {
    return tell('This Details button belongs to a run of another conversation, so it was ignored.');
  }
  const trace = await ctx.store.runs.readTrace(runId);
  // Sub-agents' steps show inside the calls that asked them. The click's trigger lives ~3 s: one level
  // of children is loaded in parallel, deeper ones are named only.
  const [tree, feedback] = await Promise.all([
    traceTree(ctx.store.runs, run.state, trace, 2),
    ctx.store.feedback.forRun(runId).catch(() => []),
  ]);
  await ctx.slack.openView(
    target.triggerId,
    traceModal(feedback.length > 0 ? { ...tree, feedback: feedbackOfTrace(feedback) } : tree),
  );
}

/**
 * Opens the Full text modal of the approval named by the card's button: every character of the call's
 * arguments, preview and reason. A button whose card lives in another conversation gets a note instead.
 */
export async function fullTextClicked(ctx: BotContext, target: ClickTarget): Promise<void> {
  const record = isApprovalId(target.value) ? await ctx.store.approvals.get(target.value) : null;
  if (!record)
    return tellClicker(ctx, target, 'I cannot find this approval any more (it may have been cleaned up).');
  if (record.card?.channel !== target.channelId) {
    return tellClicker(
      ctx,
      target,
      'This Full text button belongs to a card of another conversation, so it was ignored.',
    );
  }
  await ctx.slack.openView(target.triggerId, fullTextModal(approvalViewFromRecord(record)));
}
