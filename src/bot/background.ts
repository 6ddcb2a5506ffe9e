/**
 * Work that follows an ack: queueing jobs, decisions, card updates, ephemeral notes, modals. Slack has its
 * answer already; the task runs on, tracked, so tests can wait for it and shutdown drains it within a
 * bounded time, and a failure is logged instead of escaping.
 */
import type { Logger } from '../log/logger.js';

export interface Background {
  /** Starts `task` now without waiting for it; a failure is logged with `label` and `fields`, never thrown. */
  run(label: string, task: () => Promise<unknown>, fields?: Record<string, unknown>): void;
  /** Resolves once every task started so far, and every task those started, has settled. */
  idle(): Promise<void>;
  /** Waits like `idle` for at most `timeoutMs`; false when tasks were still running. */
  drain(timeoutMs: number): Promise<boolean>;
}

export function createBackground(logger: Logger): Background {
  const running = new Set<Promise<void>>();

  const idle = async (): Promise<void> => {
    while (running.size > 0) await Promise.allSettled([...running]);
  };

  return {
    run(label, task, fields = {}) {
      const tracked = Promise.resolve()
        .then(task)
        .then(
          () => undefined,
          (error: unknown) =>
            logger.error({ err: error, task: label, ...fields }, `bot task failed: ${label}`),
        )
        .finally(() => running.delete(tracked));
      running.add(tracked);
    },
    idle,
    async drain(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      });
      try {
        return await Promise.race([idle().then(() => true), timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/**
 * `promise`'s value, or `undefined` once `ms` have passed or when it rejects: for optional decorations
 * (a permalink) fetched while Slack waits for an answer.
 */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise.catch(() => undefined), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
