import { type Job, Worker } from 'bullmq';
import { endRun } from '../loop/finish.js';
import { isFinished } from '../loop/state.js';
import type { RedisClient } from '../queue/connection.js';
import { queuePrefix, RUNS_QUEUE } from '../queue/names.js';
import { isConnectionError } from '../queue/outage-log.js';
import { runIdForEvent, runIdOf } from '../store/ids.js';
import { slackContextOf } from './advance.js';
import { deliverEnd } from './deliver-end.js';
import type { InFlightJobs } from './hand-back.js';
import { runsProcessor } from './processor.js';
import type { WorkerRuntime } from './runtime.js';

interface RunWorkerOptions {
  /**
   * Most jobs worked at once by this process. Default 500: runs wait on models, so a process holds
   * hundreds; the load gate (load-gate.ts) stops taking jobs earlier when the process is busy.
   */
  concurrency?: number;
  /**
   * BullMQ job lock; a worker that dies loses its jobs to another worker's stall check within about
   * lockDurationMs + stalledIntervalMs. Defaults 20 s and 10 s: a crashed run continues within ~30 s.
   */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  prefix?: string;
  /** Tracks the jobs being worked on, for a shutdown to hand back (hand-back.ts). */
  inFlight?: InFlightJobs;
}

/** The run a job concerns, from its data, without trusting it further than its shape. */
function runIdOfJob(job: Job): string | null {
  const data = job.data as Record<string, unknown> | undefined;
  if (typeof data?.runId === 'string') return data.runId;
  if (typeof data?.approvalId === 'string') return runIdOf(data.approvalId);
  if (typeof data?.eventId === 'string') return runIdForEvent(data.eventId);
  return null;
}

/**
 * A job that failed its last attempt must not leave its run silent: the run ends with
 * `internal_error` and the thread is told. Best effort: when even this fails, it is logged.
 */
async function endRunAfterFailure(rt: WorkerRuntime, job: Job, error: Error) {
  const runId = runIdOfJob(job);
  if (!runId) return;
  const log = rt.logger.child({ runId, jobId: job.id });
  const lease = await rt.store.leases.acquire(runId, `${rt.workerId}/failure`, rt.leaseTtlMs);
  if (!lease.acquired) return;
  try {
    const loaded = await rt.store.runs.loadRun(runId);
    if (!loaded || isFinished(loaded.state)) return;
    const ended = endRun(
      loaded.state,
      { reason: 'internal_error', message: `loopgate could not continue this run: ${error.message}` },
      { clock: rt.clock, emit: () => {} },
    );
    await rt.store.runs.saveStep({ runId, fence: lease.fence, state: ended, persisted: loaded.persisted });
    await rt.store.approvals.cancelPending(runId, 'loopgate', 'the run failed', rt.clock.now());
    await deliverEnd(rt, ended, slackContextOf(loaded), null);
    log.error({ err: error }, 'run ended after its job failed for good');
  } finally {
    await rt.store.leases.release(runId, lease.fence);
  }
}

export function createRunWorker(rt: WorkerRuntime, connection: RedisClient, options: RunWorkerOptions = {}) {
  const processor = runsProcessor(rt);
  const worker = new Worker(RUNS_QUEUE, options.inFlight?.track(processor) ?? processor, {
    connection,
    prefix: queuePrefix(options.prefix),
    concurrency: options.concurrency ?? 500,
    lockDuration: options.lockDurationMs ?? 20_000,
    stalledInterval: options.stalledIntervalMs ?? 10_000,
    // A job may stall twice (two crashed workers) before it is failed for good.
    maxStalledCount: 2,
    autorun: false,
  });
  // Redis being unreachable is reported once per back-off step by reportRedisOutages, not per retry here.
  worker.on('error', (err) => {
    if (!isConnectionError(err)) rt.logger.error({ err }, 'worker error');
  });
  worker.on('stalled', (jobId) => rt.logger.warn({ jobId }, 'job stalled; another worker takes it over'));
  worker.on('failed', (job, err) => {
    if (!job) return;
    const final = job.attemptsMade >= (job.opts.attempts ?? 1) || err.name === 'UnrecoverableError';
    rt.logger.error({ jobId: job.id, job: job.name, attempts: job.attemptsMade, final, err }, 'job failed');
    if (final) {
      endRunAfterFailure(rt, job, err).catch((e: unknown) =>
        rt.logger.error({ jobId: job.id, err: e }, 'could not end the run of a failed job'),
      );
    }
  });
  return worker;
}

/** Stops taking jobs and waits for the current steps to finish, at most `timeoutMs`. */
export async function closeWorker(worker: Worker, timeoutMs: number): Promise<'closed' | 'timed_out'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timed_out'>((resolve) => {
    timer = setTimeout(() => resolve('timed_out'), timeoutMs);
  });
  try {
    return await Promise.race([worker.close().then(() => 'closed' as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
