/**
 * The jobs this worker process is working on, so that a shutdown that runs out of time can hand them back
 * to the queue instead of leaving them locked: another worker then takes each at once, and it does not
 * count as stalled (BullMQ fails a job for good after `maxStalledCount` stalls, so two slow deploys in a
 * row would otherwise end a run). The run's lease is not touched: the step still in flight keeps it until
 * it expires (WORKER_LOCK_MS), so no two workers ever advance the run at once.
 */
import type { Job } from 'bullmq';
import type { Logger } from '../loop/tool-contract.js';

type Processor = (job: Job, token?: string) => Promise<void>;

export interface InFlightJobs {
  /** `processor`, with each job it works on known until it returns or throws. */
  track(processor: Processor): Processor;
  /** Moves every job still being worked on back to waiting; resolves with how many went back. */
  handBack(): Promise<number>;
}

export function inFlightJobs(logger: Logger): InFlightJobs {
  const active = new Map<Job, string | undefined>();
  return {
    track: (processor) => async (job, token) => {
      active.set(job, token);
      try {
        await processor(job, token);
      } finally {
        active.delete(job);
      }
    },
    async handBack() {
      const moved = await Promise.all(
        [...active].map(([job, token]) =>
          job.moveToWait(token).then(
            () => {
              logger.warn({ jobId: job.id, job: job.name }, 'job handed back to the queue unfinished');
              return true;
            },
            (err: unknown) => {
              // Finished (or lost its lock) meanwhile: nothing to hand back.
              logger.warn({ jobId: job.id, err }, 'could not hand the job back');
              return false;
            },
          ),
        ),
      );
      return moved.filter(Boolean).length;
    },
  };
}
