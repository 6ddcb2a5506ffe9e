/**
 * The durable timers of a pending approval, as delayed jobs of the runs queue (their ids make re-adding
 * harmless): its expiry, a reminder at each `remindAtPercent` of its time, and its escalation. A timer of
 * an approval that was edited acts on the round the edits led to; one that finds it decided does nothing.
 */
import type { EscalateJobData, RemindJobData } from '../queue/job-data.js';
import { addRunJob } from '../queue/runs-queue.js';
import { approvalViewFromRecord } from '../slack/approval-view.js';
import { mention, slackDate, userMention } from '../slack/mrkdwn.js';
import type { ApprovalRecord } from '../store/records.js';
import { slackContextOf } from './advance.js';
import type { AdvanceResult } from './run-lease.js';
import type { WorkerRuntime } from './runtime.js';

export async function addTimers(rt: WorkerRuntime, record: ApprovalRecord, now: number): Promise<void> {
  const { runId, approvalId, createdAt, expiresAt } = record;
  await addRunJob(rt.queue, { name: 'expire', data: { v: 1, runId, approvalId } }, expiresAt - now);
  for (const percent of record.remindAtPercent ?? []) {
    const at = createdAt + ((expiresAt - createdAt) * percent) / 100;
    if (at <= now) continue;
    await addRunJob(rt.queue, { name: 'remind', data: { v: 1, runId, approvalId, percent } }, at - now);
  }
  const escalation = record.escalation;
  if (escalation && createdAt + escalation.afterMs < expiresAt) {
    const delay = Math.max(1, createdAt + escalation.afterMs - now);
    await addRunJob(rt.queue, { name: 'escalate', data: { v: 1, runId, approvalId } }, delay);
  }
}

/** Who may still decide, as mentions: approvers who have not approved yet, and the groups. */
function waitingOn(record: ApprovalRecord): string {
  const voted = new Set((record.votes ?? []).map((v) => v.by));
  const users = record.approvers.users.filter((u) => !voted.has(u)).map(userMention);
  return [...users, ...record.approvers.groups.map(mention)].join(', ') || 'nobody';
}

/** The still-pending latest round of an approval, with its run's thread; null when there is nothing to do. */
async function pendingRound(rt: WorkerRuntime, approvalId: string, runId: string) {
  const record = await rt.store.approvals.latest(approvalId);
  if (record?.status !== 'pending' || rt.clock.now() >= record.expiresAt) return null;
  const run = await rt.store.runs.loadRun(runId);
  return run ? { record, ctx: slackContextOf(run) } : null;
}

/** A reminder in the card's thread, mentioning who may still decide. */
export async function handleRemind(rt: WorkerRuntime, data: RemindJobData): Promise<AdvanceResult> {
  const found = await pendingRound(rt, data.approvalId, data.runId);
  if (!found) return { type: 'done' };
  const { record, ctx } = found;
  const who = waitingOn(record);
  const quorum = record.quorum ?? 1;
  const progress = quorum > 1 ? ` (${record.votes?.length ?? 0} of ${quorum} approvals so far)` : '';
  const text =
    `:alarm_clock: Reminder: \`${record.tool}\` is still waiting for a decision${progress}. ${who}: ` +
    `please approve or reject it on the card above; it expires ${slackDate(record.expiresAt)} and then does not run.`;
  const now = rt.clock.now();
  if (
    await rt.store.approvals.markReminded(record, data.percent, `reminded ${who} at ${data.percent}%`, now)
  ) {
    await rt.notifier.note(ctx, text);
  }
  return { type: 'done' };
}

/** Escalation: the escalation approvers are added to the approval (the card redrawn) and told. */
export async function handleEscalate(rt: WorkerRuntime, data: EscalateJobData): Promise<AdvanceResult> {
  const found = await pendingRound(rt, data.approvalId, data.runId);
  if (!found?.record.escalation) return { type: 'done' };
  const escalated = await rt.store.approvals.escalate(found.record.approvalId, rt.clock.now());
  if (!escalated?.changed) return { type: 'done' };
  const { record } = escalated;
  const to = found.record.escalation;
  const added = [...to.to.users.map(userMention), ...to.to.groups.map(mention)].join(', ');
  if (record.card)
    await rt.notifier.updateCard({ runId: data.runId }, record.card, approvalViewFromRecord(record));
  await rt.notifier.note(
    found.ctx,
    `:arrow_double_up: Escalated: nobody has decided on \`${record.tool}\` yet. ${added}: you may now approve or reject it too, on the card above; it expires ${slackDate(record.expiresAt)}.`,
  );
  return { type: 'done' };
}
