/**
 * Start jobs arriving together (a burst of mentions) are added to the queue together: everything added
 * within one turn of the event loop goes out as one `addBulk` (one MULTI round trip). Each job keeps its
 * own deduplicating id and options, exactly as `addRunJob` would give them; BullMQ runs the same add
 * script per job, so a duplicate id is still ignored. Under a burst this costs the bot's event loop a
 * fraction of one `add` per job, which is what keeps later requests' acks fast.
 */
import { jobIdFor, jobOptions, jobSchemas, type RunsQueue, type StartJobData } from '../queue/index.js';

export interface JobBatcher {
  /** Resolves once the job (or a job with its id) is in the queue; rejects when its batch failed. */
  addStart(data: StartJobData): Promise<void>;
}

interface Waiting {
  data: StartJobData;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export function createJobBatcher(queue: RunsQueue): JobBatcher {
  let waiting: Waiting[] = [];

  const flush = async (): Promise<void> => {
    const batch = waiting;
    waiting = [];
    try {
      await queue.addBulk(
        batch.map(({ data }) => ({
          name: 'start' as const,
          data,
          opts: jobOptions('start', jobIdFor({ name: 'start', data })),
        })),
      );
      for (const job of batch) job.resolve();
    } catch (error) {
      for (const job of batch) job.reject(error);
    }
  };

  return {
    addStart(data) {
      const valid = jobSchemas.start.parse(data);
      return new Promise<void>((resolve, reject) => {
        if (waiting.length === 0) setImmediate(() => void flush());
        waiting.push({ data: valid, resolve, reject });
      });
    },
  };
}
