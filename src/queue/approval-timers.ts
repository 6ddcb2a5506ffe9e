/**
 * The durable timers of a pending approval round, as delayed jobs of the runs queue (their ids make
 * re-adding harmless): its expiry, a reminder at each `remindAtPercent` of its time, its escalation, and,
 * when on-call sources may decide it, a look at who is on call every `oncallWatchMs` (the roster's cache
 * period) so its card follows a handoff while it waits.
 * Each timer names the round it was made for and acts on that round only (src/worker/approval-timers.ts):
 * an edited call's round, asked under the rule that matches the edited arguments, gets timers of its own.
 */
import type { ApprovalRecord } from '../store/records.js';
import { addRunJob, type RunsQueue } from './runs-queue.js';

export type TimedRound = Pick<
  ApprovalRecord,
  'runId' | 'approvalId' | 'createdAt' | 'expiresAt' | 'remindAtPercent' | 'escalation' | 'approvers'
>;

/** How often a waiting card looks again at who is on call, unless the policy says (its roster cache period). */
const DEFAULT_ONCALL_WATCH_MS = 60_000;

/** Whether on-call sources may decide the round, now or once it escalates. */
const watchesOncall = (round: Pick<TimedRound, 'approvers' | 'escalation'>): boolean =>
  (round.approvers.oncall?.length ?? 0) > 0 || (round.escalation?.to.oncall?.length ?? 0) > 0;

export async function addApprovalTimers(
  queue: RunsQueue,
  round: TimedRound,
  now: number,
  oncallWatchMs = DEFAULT_ONCALL_WATCH_MS,
): Promise<void> {
  const { runId, approvalId, createdAt, expiresAt } = round;
  await addRunJob(queue, { name: 'expire', data: { v: 1, runId, approvalId } }, expiresAt - now);
  for (const percent of round.remindAtPercent ?? []) {
    const at = createdAt + ((expiresAt - createdAt) * percent) / 100;
    if (at <= now) continue;
    await addRunJob(queue, { name: 'remind', data: { v: 1, runId, approvalId, percent } }, at - now);
  }
  const escalation = round.escalation;
  if (escalation && createdAt + escalation.afterMs < expiresAt) {
    const delay = Math.max(1, createdAt + escalation.afterMs - now);
    await addRunJob(queue, { name: 'escalate', data: { v: 1, runId, approvalId } }, delay);
  }
  if (watchesOncall(round)) await addOncallWatch(queue, round, { tick: 1 }, now, oncallWatchMs);
}

/** The next look at who is on call, unless the round expires first. */
export async function addOncallWatch(
  queue: RunsQueue,
  round: Pick<TimedRound, 'runId' | 'approvalId' | 'expiresAt'>,
  next: { tick: number; shown?: string },
  now: number,
  oncallWatchMs = DEFAULT_ONCALL_WATCH_MS,
): Promise<void> {
  if (now + oncallWatchMs >= round.expiresAt) return;
  const { runId, approvalId } = round;
  await addRunJob(queue, { name: 'oncall_watch', data: { v: 1, runId, approvalId, ...next } }, oncallWatchMs);
}
