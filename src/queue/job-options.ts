import type { JobsOptions } from 'bullmq';
import type { JobName } from './names.js';

const HOUR_S = 3600;

/**
 * Default options of every job of the runs queue.
 * - attempts 8 with exponential backoff from 1 s (1, 2, 4 ... 64 s; about 2 minutes in all): long
 *   enough to outlast a crashed worker's lease (renewed every few seconds, 30 s TTL) and a Redis blip.
 *   Bad data fails at once (UnrecoverableError), whatever the attempts.
 * - removeOnComplete: kept 24 h (at most 10,000). While a completed job is kept, an add with its id is
 *   ignored: this window must exceed Slack's retries (up to ~5 min) for start-job deduplication.
 * - removeOnFail: kept 7 days (at most 10,000), for inspection.
 */
export const DEFAULT_JOB_OPTIONS = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: { age: 24 * HOUR_S, count: 10_000 },
  removeOnFail: { age: 7 * 24 * HOUR_S, count: 10_000 },
} as const satisfies JobsOptions;

/**
 * Jobs that are durable timers: an approval's expiry, reminder, escalation and on-call watch, a sub-agent's safety
 * check, a budget ask's expiry.
 */
const TIMERS: ReadonlySet<JobName> = new Set([
  'expire',
  'remind',
  'escalate',
  'oncall_watch',
  'child_end',
  'budget_expire',
]);

/** Options of one job: the defaults, its id, and for a timer its delay. */
export function jobOptions(name: JobName, jobId: string, delayMs = 0): JobsOptions {
  if (!TIMERS.has(name) && delayMs !== 0) throw new RangeError(`only timer jobs are delayed, not ${name}`);
  return {
    ...DEFAULT_JOB_OPTIONS,
    backoff: { ...DEFAULT_JOB_OPTIONS.backoff },
    removeOnComplete: { ...DEFAULT_JOB_OPTIONS.removeOnComplete },
    removeOnFail: { ...DEFAULT_JOB_OPTIONS.removeOnFail },
    jobId,
    ...(delayMs > 0 ? { delay: Math.ceil(delayMs) } : {}),
  };
}
