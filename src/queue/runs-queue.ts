import { type Job, Queue } from 'bullmq';
import type { RedisClient } from './connection.js';
import { type JobData, jobSchemas, type RunJob } from './job-data.js';
import { jobIdFor } from './job-ids.js';
import { DEFAULT_JOB_OPTIONS, jobOptions } from './job-options.js';
import { type JobName, queuePrefix, RUNS_QUEUE } from './names.js';

export type RunsQueue = Queue<JobData<JobName>, unknown, JobName>;

/** The runs queue (producer side) on a connection from `createRedisConnection(url, 'producer')`. */
export function createRunsQueue(connection: RedisClient, prefix?: string): RunsQueue {
  return new Queue<JobData<JobName>, unknown, JobName>(RUNS_QUEUE, {
    connection,
    prefix: queuePrefix(prefix),
    defaultJobOptions: DEFAULT_JOB_OPTIONS,
  });
}

/**
 * Validates and adds a job with its deduplicating id. Adding a job whose id exists is a no-op: BullMQ
 * keeps the stored job. `delayMs` (expire jobs only) is the time until the approval expires.
 */
export async function addRunJob(
  queue: RunsQueue,
  job: RunJob,
  delayMs = 0,
): Promise<Job<JobData<JobName>, unknown, JobName>> {
  const data = jobSchemas[job.name].parse(job.data);
  return queue.add(job.name, data, jobOptions(job.name, jobIdFor(job), Math.max(0, delayMs)));
}
