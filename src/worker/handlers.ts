import { scheduleNextWatch } from '../agents/child-runs.js';
import { createRun, currentTimeNote, isFinished } from '../loop/state.js';
import { addApprovalTimers } from '../queue/approval-timers.js';
import type {
  BudgetJobData,
  CancelJobData,
  ChildEndJobData,
  ExpireJobData,
  ResumeJobData,
  StartJobData,
} from '../queue/job-data.js';
import { approvalViewFromRecord } from '../slack/approval-view.js';
import { StoreError } from '../store/errors.js';
import { roundOf, runIdForEvent } from '../store/ids.js';
import { advanceRun } from './advance.js';
import { redrawBudgetCard } from './budget-pause.js';
import { paneContextMessages } from './pane-context.js';
import { rerunApproved } from './rerun.js';
import type { AdvanceResult } from './run-lease.js';
import type { WorkerRuntime } from './runtime.js';

/**
 * A person asked: create the run (once per Slack event) and advance it. A thread works on one run at
 * a time; a message arriving while another run works in its thread waits in the thread's inbox.
 */
export async function handleStart(
  rt: WorkerRuntime,
  data: StartJobData,
  jobId: string,
): Promise<AdvanceResult> {
  const runId = runIdForEvent(data.eventId);
  const log = rt.logger.child({ runId, jobId });
  // A job that reaches a stopping worker goes back untouched, for a worker that stays.
  if (rt.stopping()) return { type: 'busy', retryInMs: 0 };
  const thread = { teamId: data.teamId, channelId: data.channelId, threadTs: data.threadTs };
  const existing = await rt.store.runs.loadRun(runId);
  if (existing && isFinished(existing.state) && existing.answerTs !== null) return { type: 'done' };
  const { queuedBehind: _ignored, ...queued } = data;
  let claimed = await rt.store.threads.claim(thread, runId, queued);
  if (claimed !== 'active') {
    const active = await rt.store.threads.activeRun(thread);
    const holder = active ? await rt.store.runs.loadRun(active) : null;
    // A finished run still marked active means its job died before freeing the thread.
    if (active && (!holder || isFinished(holder.state))) {
      claimed = await rt.store.threads.claim(thread, runId, queued, active);
    }
  }
  if (claimed === 'full') {
    // The bot refuses messages to a full inbox with a reply; only a race of messages reaches this, and
    // the person is still told, never left waiting for an answer that will not come.
    log.warn({}, "the thread's inbox is full; the message is not taken");
    await rt.notifier.note(
      { runId, ...thread, requestMessageTs: data.messageTs },
      `<@${data.userId}> I could not take your message: too many messages already wait in this thread for the run working here. Please send it again once it has answered.`,
    );
    return { type: 'done' };
  }
  if (claimed === 'queued') {
    log.info({}, 'another run works in this thread; the message waits for it');
    return { type: 'done' };
  }
  if (!existing) {
    const timeZone = await rt.timeZoneOf?.(data.userId);
    const now = rt.clock.now();
    const state = createRun({
      runId,
      requester: { userId: data.userId, teamId: data.teamId, ...(timeZone ? { timeZone } : {}) },
      systemPrompt: rt.policy.systemPrompt(data.channelId),
      history: [...(await rt.store.threads.history(thread)), ...paneContextMessages(data.viewing)],
      question: data.text,
      questionNote: currentTimeNote(now),
      limits: rt.policy.limits,
      now,
    });
    const { created } = await rt.store.runs.createRun(state, {
      teamId: data.teamId,
      channelId: data.channelId,
      threadTs: data.threadTs,
      requestMessageTs: data.messageTs,
    });
    if (created) {
      log.info({ kind: data.kind }, 'run created');
      await rt.notifier.reaction({ runId, ...thread, requestMessageTs: data.messageTs }, 'working');
    }
  }
  return advanceRun(rt, runId, jobId, undefined, {
    name: 'start',
    ...(data.trace ? { trace: data.trace } : {}),
  });
}

/**
 * A decision was recorded: apply it (and any other recorded ones) and continue the run. A later round of
 * an approval ("Approve again" after an unknown outcome) runs that one call again instead.
 */
export async function handleResume(
  rt: WorkerRuntime,
  data: ResumeJobData,
  jobId: string,
): Promise<AdvanceResult> {
  // A later round made by an edit (or asked again after its plan changed) is the paused call itself, not
  // a run again.
  const round = roundOf(data.approvalId) > 1 ? await rt.store.approvals.get(data.approvalId) : undefined;
  if (round !== undefined && !round?.editOf && !round?.replanOf) {
    return rerunApproved(rt, data, jobId);
  }
  return advanceRun(rt, data.runId, jobId, undefined, {
    name: 'resume',
    ...(data.trace ? { trace: data.trace } : {}),
  });
}

/**
 * An approval round's time is up: expire that round unless someone decided first, then let the run
 * continue. A round that was edited meanwhile is left alone: the edited round has its own expiry (re-added
 * here, harmlessly when it exists, in case the bot stopped between storing the edit and adding its timers).
 */
export async function handleExpire(
  rt: WorkerRuntime,
  data: ExpireJobData,
  jobId: string,
): Promise<AdvanceResult> {
  const { record, changed } = await rt.store.approvals.decide({
    approvalId: data.approvalId,
    decision: 'expired',
    now: rt.clock.now(),
  });
  if (record.editedTo) {
    const latest = await rt.store.approvals.latest(record.editedTo);
    if (latest?.status === 'pending')
      await addApprovalTimers(rt.queue, latest, rt.clock.now(), rt.policy.oncallWatchMs);
  }
  // Decided already. Advancing anyway is harmless (a run that used the decision has nothing to apply) and
  // finishes what no resume job will: a decision whose resume job was never queued (the bot died in
  // between), or a click that came too late and expired the approval itself.
  if (!changed) return advanceRun(rt, data.runId, jobId, undefined, { name: 'expire' });
  rt.metrics?.approvalsDecided.inc({ decision: 'expired' });
  if (record.card) {
    await rt.notifier.updateCard({ runId: data.runId }, record.card, approvalViewFromRecord(record));
  }
  return advanceRun(rt, data.runId, jobId, undefined, { name: 'expire' });
}

/**
 * Someone asked to cancel (the bot recorded the request on the run): a working run stops at its next
 * step boundary by itself; this job ends a paused run.
 */
export async function handleCancel(
  rt: WorkerRuntime,
  data: CancelJobData,
  jobId: string,
): Promise<AdvanceResult> {
  const loaded = await rt.store.runs.loadRun(data.runId);
  if (!loaded || isFinished(loaded.state)) return { type: 'done' };
  if (!loaded.cancelRequest)
    await rt.store.runs.requestCancel(data.runId, { by: data.by, at: rt.clock.now() });
  return advanceRun(rt, data.runId, jobId, undefined, { name: 'cancel' });
}

/**
 * A sub-agent's run ended (or a safety check while it works came due): the parent applies whatever of
 * its children ended. A check schedules the next one while the parent still waits for that child.
 */
export async function handleChildEnd(
  rt: WorkerRuntime,
  data: ChildEndJobData,
  jobId: string,
): Promise<AdvanceResult> {
  // The child is read while the parent's lease is taken and the parent loaded, not after.
  const child = rt.store.runs.loadRun(data.childRunId);
  child.catch(() => {}); // Awaited (and its failure seen) only if the parent still waits for it.
  const result = await advanceRun(rt, data.runId, jobId, new Map([[data.childRunId, child]]), {
    name: 'child_end',
  });
  if (result.type === 'done' && data.watch !== undefined) {
    await scheduleNextWatch(rt, data.runId, data.childRunId, data.watch);
  }
  return result;
}

/**
 * A budget ask's time is up: expire that round unless someone answered first (its card then says so),
 * then let the run go on, which ends it with its stop reason (or applies the answer that came first).
 */
export async function handleBudgetExpire(
  rt: WorkerRuntime,
  data: BudgetJobData,
  jobId: string,
): Promise<AdvanceResult> {
  const answer = await rt.store.budgetAsks
    .decide({ runId: data.runId, round: data.round, decision: 'expired', now: rt.clock.now() })
    .catch((err: unknown) => {
      // The run has no such ask any more (a later round, or it expired): nothing to expire.
      if (err instanceof StoreError) return null;
      throw err;
    });
  if (answer?.outcome === 'decided') await redrawBudgetCard(rt, answer.record);
  return advanceRun(rt, data.runId, jobId, undefined, { name: 'budget_expire' });
}
