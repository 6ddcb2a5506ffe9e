import { DelayedError, type Job } from 'bullmq';
import { parseJobData } from '../queue/job-data.js';
import { advanceRun } from './advance.js';
import { handleEscalate, handleOncallWatch, handleRemind } from './approval-timers.js';
import {
  handleBudgetExpire,
  handleCancel,
  handleChildEnd,
  handleExpire,
  handleResume,
  handleStart,
} from './handlers.js';
import type { AdvanceResult } from './run-lease.js';
import type { WorkerRuntime } from './runtime.js';

/** How long a question waits before trying again while its requester has every slot they may hold. */
const REQUESTER_WAIT_MS = 500;

/**
 * A child's end often arrives while its parent's job still finishes the pause that started the child (a
 * few ms before it releases the lease): it is tried again soon, then less often the longer it has
 * waited, and never later than the lease would end.
 */
function retrySoon(result: AdvanceResult, waitedMs: number): AdvanceResult {
  if (result.type !== 'busy') return result;
  return { type: 'busy', retryInMs: Math.min(result.retryInMs, Math.max(20, Math.floor(waitedMs / 4))) };
}

/**
 * The BullMQ processor of the runs queue: validates the job (bad data fails at once, unretried), runs
 * its handler, and when another job holds the run's lease (or the requester already has their share of
 * this process's runs), puts the job back as delayed.
 */
export function runsProcessor(rt: WorkerRuntime) {
  return async (job: Job, token?: string): Promise<void> => {
    const parsed = parseJobData(job.name, job.data);
    const jobId = job.id ?? 'unknown';
    // Wait time in the queue: from when the job became runnable (added, or its delay ended).
    const runnableAt = job.timestamp + (job.delay ?? 0);
    rt.metrics?.jobLatency.observe({ job: parsed.name }, Math.max(0, Date.now() - runnableAt) / 1000);
    let result: AdvanceResult;
    switch (parsed.name) {
      case 'start': {
        const release = rt.requesterSlots?.tryTake(parsed.data.userId);
        if (release === null) {
          result = { type: 'busy', retryInMs: REQUESTER_WAIT_MS };
          break;
        }
        try {
          result = await handleStart(rt, parsed.data, jobId);
        } finally {
          release?.();
        }
        break;
      }
      case 'resume':
        result = await handleResume(rt, parsed.data, jobId);
        break;
      case 'expire':
        result = await handleExpire(rt, parsed.data, jobId);
        break;
      case 'cancel':
        result = await handleCancel(rt, parsed.data, jobId);
        break;
      case 'remind':
        result = await handleRemind(rt, parsed.data);
        break;
      case 'escalate':
        result = await handleEscalate(rt, parsed.data);
        break;
      case 'oncall_watch':
        result = await handleOncallWatch(rt, parsed.data);
        break;
      case 'child_start':
        // A sub-agent's run, created by its parent: it takes no requester slot (its parent held one).
        result = await advanceRun(rt, parsed.data.runId, jobId, undefined, { name: 'child_start' });
        break;
      case 'child_end':
        result = retrySoon(await handleChildEnd(rt, parsed.data, jobId), Date.now() - job.timestamp);
        break;
      case 'budget_resume':
        // A budget ask was answered (the bot recorded it): the run applies the answer.
        result = await advanceRun(rt, parsed.data.runId, jobId, undefined, { name: 'budget_resume' });
        break;
      case 'budget_expire':
        result = await handleBudgetExpire(rt, parsed.data, jobId);
        break;
    }
    rt.metrics?.jobsProcessed.inc({ job: parsed.name, outcome: result.type });
    if (result.type === 'busy') {
      await job.moveToDelayed(Date.now() + result.retryInMs, token);
      throw new DelayedError();
    }
  };
}
