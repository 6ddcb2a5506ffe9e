import { cancelAbandonedChildren, handToParent } from '../agents/child-runs.js';
import type { RunState } from '../loop/run-state.js';
import { startJobSchema } from '../queue/job-data.js';
import { addRunJob } from '../queue/runs-queue.js';
import type { RunSlackContext } from '../slack/notifier-port.js';
import { SlackBudgetExhausted } from '../slack/rate/slack-budget.js';
import type { RunSurface } from '../slack/surfaces/agent-surfaces.js';
import type { ThreadTurn } from '../store/threads/thread-memory.js';
import type { WorkerRuntime } from './runtime.js';

/** What the thread remembers of a run: the question, and the answer or why there is none. */
function turnsOf(state: RunState): ThreadTurn[] {
  const answer =
    state.answer?.join('\n\n') ?? `(no answer: ${state.stopMessage ?? state.stopReason ?? 'ended'})`;
  return [
    { role: 'user', content: state.question },
    { role: 'assistant', content: answer },
  ];
}

/** How long an answer that found no Slack slot waits before its job tries again. */
export const UNDELIVERED_RETRY_MS = 5_000;

/**
 * Tells the thread how a run ended (once: `answerTs` marks it delivered), records the exchange in the
 * thread's memory, frees the thread and starts the next message that waited there. Children the run left
 * working are cancelled first. A sub-agent's run tells its parent instead: the thread shows one answer,
 * its parent's.
 *
 * `deferred`: Slack's rate budget had no slot for the answer within its wait. Nothing is marked: the
 * answer stays in the run (answerTs unset, the thread still held) and the caller retries the job later,
 * on any worker.
 */
export async function deliverEnd(
  rt: WorkerRuntime,
  state: RunState,
  ctx: RunSlackContext,
  answerTs: string | null,
  /** The run's agent surfaces in this job: its stream is the answer when it says exactly the answer. */
  surface?: RunSurface | null,
): Promise<'delivered' | 'deferred'> {
  await cancelAbandonedChildren(rt, state);
  if (state.agent) {
    await handToParent(rt, state);
    return 'delivered';
  }
  if (answerTs === null) {
    const streamed = surface ? await surface.finish(state) : null;
    let ts: string | null;
    try {
      ts =
        streamed ??
        (await rt.notifier.finalAnswer(ctx, {
          parts: state.answer ?? [],
          stopReason: state.stopReason,
          stopMessage: state.stopMessage,
        }));
    } catch (err) {
      if (!(err instanceof SlackBudgetExhausted)) throw err;
      rt.logger.warn(
        { runId: state.runId, waitedMs: err.waitedMs, retryInMs: UNDELIVERED_RETRY_MS },
        "the answer found no room in Slack's rate budget; it stays in the run and is delivered later",
      );
      return 'deferred';
    }
    await rt.notifier.reaction(ctx, state.status === 'completed' ? 'done' : 'failed');
    await rt.store.runs.setAnswerTs(state.runId, ts ?? 'undelivered');
  }
  const thread = { teamId: ctx.teamId ?? '', channelId: ctx.channelId, threadTs: ctx.threadTs };
  const next = await rt.store.threads.release(thread, state.runId, turnsOf(state));
  if (next === null) return 'delivered';
  const parsed = startJobSchema.safeParse(next);
  if (!parsed.success) {
    rt.logger.error(
      { runId: state.runId, issues: parsed.error.issues },
      'dropped a malformed queued message',
    );
    return 'delivered';
  }
  await addRunJob(rt.queue, { name: 'start', data: { ...parsed.data, queuedBehind: state.runId } });
  return 'delivered';
}
