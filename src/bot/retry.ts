import { setTimeout as sleep } from 'node:timers/promises';

interface RetryOptions {
  /** Waits before each retry; as many retries as delays. */
  delaysMs: readonly number[];
  /** False for errors that another attempt cannot fix (they are rethrown at once). Default: all retry. */
  retryable?: (error: unknown) => boolean;
  /** Hears each failure that is retried. */
  onRetry?: (error: unknown, retry: number) => void;
}

/** Runs `attempt` until it succeeds or the delays are used up; the last failure is rethrown. */
export async function withRetries<T>(attempt: () => Promise<T>, options: RetryOptions): Promise<T> {
  for (let retry = 0; ; retry++) {
    try {
      return await attempt();
    } catch (error) {
      const delay = options.delaysMs[retry];
      if (delay === undefined || options.retryable?.(error) === false) throw error;
      options.onRetry?.(error, retry + 1);
      await sleep(delay);
    }
  }
}
