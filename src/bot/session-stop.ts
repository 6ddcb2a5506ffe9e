/**
 * The agent session's stop button (`agent_session_stopped`): the run working in that thread is cancelled
 * durably at once, through the same path as `/loopgate cancel` (cancel.ts), and the worker advancing it
 * aborts its model request and reads as soon as it hears of it. The thread then says who stopped it.
 *
 * Who may stop: Slack shows the button to the people in the thread, which in a channel may be anyone
 * there. The click counts for the people who may cancel the run by command (its requester, or an approver
 * of its tools who is a member of the conversation); anyone else is told so in an ephemeral note, and the
 * run goes on. Slack's redeliveries of the event (same `event_id`) change nothing: the first cancel
 * request is kept, the cancel job's id is the run's, and the note goes out on the first delivery only.
 */
import { isFinished } from '../loop/state.js';
import type { ThreadRef } from '../store/index.js';
import { mayCancel, requestRunCancel } from './cancel.js';
import type { BotContext } from './context.js';
import type { AgentSessionStopped } from './slack-payloads.js';

interface ReceivedStop {
  event: AgentSessionStopped;
  eventId: string;
  teamId: string;
  /** Slack's retry count of this delivery (undefined for the first). */
  retryNum: number | undefined;
}

type StopOutcome = 'cancelled' | 'no_active_run' | 'already_ended' | 'not_allowed';

export const CANNOT_STOP_TEXT =
  'You cannot stop this run: only the person who asked, or an approver of its tools, can. It goes on.';

/**
 * Resolves once the cancel is recorded (the event is acked then); rejects when Redis fails, so Slack
 * delivers the event again.
 */
export async function sessionStopped(ctx: BotContext, received: ReceivedStop): Promise<StopOutcome> {
  const { event } = received;
  const thread: ThreadRef = { teamId: received.teamId, channelId: event.channel, threadTs: event.thread_ts };
  const fields = {
    eventId: received.eventId,
    channel: event.channel,
    threadTs: event.thread_ts,
    user: event.user,
  };
  const runId = await ctx.store.threads.activeRun(thread);
  const run = runId ? await ctx.store.runs.loadRun(runId) : null;
  if (!run) {
    ctx.logger.info(fields, 'stop button: no run is working in this thread');
    return 'no_active_run';
  }
  const log = { ...fields, runId: run.state.runId };
  if (isFinished(run.state)) {
    ctx.logger.info(log, 'stop button: the run already ended');
    return 'already_ended';
  }
  if (!(await mayCancel(ctx, event.user, run))) {
    ctx.logger.info(log, 'stop button: refused (neither the requester nor an approver)');
    if (received.retryNum === undefined || received.retryNum === 0) {
      const to = { channel: event.channel, user: event.user, threadTs: event.thread_ts };
      ctx.background.run('stop refused note', () => ctx.slack.ephemeral(to, CANNOT_STOP_TEXT), log);
    }
    return 'not_allowed';
  }
  await requestRunCancel(ctx, run, event.user, 'stop_button');
  ctx.metrics?.stopClicks.inc();
  return 'cancelled';
}
