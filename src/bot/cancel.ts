/**
 * Cancelling a run, shared by `/loopgate cancel <run id>` and the agent session's stop button. The cancel
 * is recorded on the run first (durable: the worker advancing the run reads it at its next step, and the
 * cancel job ends a paused run), then announced on the `cancels` channel so that worker aborts its model
 * request and reads at once, and a `cancel` job is queued (one per run: its id is the run's).
 */

import { isApprover } from '../approvers/resolve.js';
import { enabledGatedTools } from '../config/policy.js';
import { approversFor } from '../config/policy-limits.js';
import { addRunJob } from '../queue/index.js';
import type { LoadedRun } from '../store/index.js';
import type { BotContext } from './context.js';

/**
 * Records, announces and queues the cancel of `run` by `by`. A run whose cancel is recorded already keeps
 * the first request (who and when: the thread says who stopped it); it is announced and queued again,
 * which changes nothing but helps a worker that missed the first announcement.
 */
export async function requestRunCancel(
  ctx: Pick<BotContext, 'store' | 'queue' | 'clock' | 'logger'>,
  run: LoadedRun,
  by: string,
  via: 'command' | 'stop_button',
): Promise<void> {
  const { runId } = run.state;
  if (run.cancelRequest) await ctx.store.runs.announceCancel(runId);
  else await ctx.store.runs.requestCancel(runId, { by, at: ctx.clock.now() });
  await addRunJob(ctx.queue, { name: 'cancel', data: { v: 1, runId, by: run.cancelRequest?.by ?? by } });
  ctx.logger.info({ runId, by, via }, 'run cancel requested');
}

/**
 * Who may cancel a run: its requester, or an approver of the run's tools who can see its conversation.
 * The run's tools are those it asked approval for; before its first approval, the write and notify tools
 * the policy enables (any of which it may ask for). A Slack lookup that fails counts as no.
 */
export async function mayCancel(ctx: BotContext, userId: string, run: LoadedRun): Promise<boolean> {
  if (userId === run.state.requester.userId) return true;
  const asked = new Set((await ctx.store.approvals.listForRun(run.state.runId)).map((a) => a.tool));
  const tools = asked.size > 0 ? [...asked] : enabledGatedTools(ctx.policy);
  let approver = false;
  for (const tool of tools) {
    approver = (await isApprover(approversFor(ctx.policy, tool), userId, ctx)).ok;
    if (approver) break;
  }
  if (!approver) return false;
  return ctx.slack.isMember(run.slack.channelId, userId).catch(() => false);
}
