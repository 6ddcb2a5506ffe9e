/**
 * The durable timers of a pending approval, as delayed jobs of the runs queue (their ids make re-adding
 * harmless): its expiry, a reminder at each `remindAtPercent` of its time, and its escalation.
 */
import { addRunJob } from '../queue/runs-queue.js';
import type { ApprovalRecord } from '../store/records.js';
import type { WorkerRuntime } from './runtime.js';

export async function addTimers(rt: WorkerRuntime, record: ApprovalRecord, now: number): Promise<void> {
  const { runId, approvalId } = record;
  await addRunJob(rt.queue, { name: 'expire', data: { v: 1, runId, approvalId } }, record.expiresAt - now);
}
