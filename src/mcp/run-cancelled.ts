/**
 * Whether someone asked to cancel a run (the run header's `cancel` field, set by the bot or the cancel
 * job). The engine stops a cancelled run only at its next step boundary; an MCP read call in flight polls
 * this so a cancel reaches the server as `notifications/cancelled` instead of waiting for the timeout.
 */
import type { Store } from '../store/store.js';

export type RunCancelled = (runId: string) => Promise<boolean>;

export function redisRunCancelled(store: Store): RunCancelled {
  const { redis, keys } = store.context;
  return async (runId) => (await redis.hexists(keys.run(runId).header, 'cancel')) === 1;
}

/** How often a read call in flight checks for a cancel. */
const CANCEL_POLL_MS = 500;

/**
 * A signal that aborts with `signal`, or once `cancelled(runId)` says so (checked every `pollMs`).
 * `stop()` ends the polling; a failing check counts as not cancelled.
 */
export function cancellable(
  signal: AbortSignal,
  runId: string,
  cancelled: RunCancelled,
  pollMs = CANCEL_POLL_MS,
): { signal: AbortSignal; cancelledByRun: () => boolean; stop: () => void } {
  const byRun = new AbortController();
  let hit = false;
  const timer = setInterval(() => {
    cancelled(runId).then(
      (yes) => {
        if (yes && !byRun.signal.aborted) {
          hit = true;
          byRun.abort(new Error('the run was cancelled'));
        }
      },
      () => {},
    );
  }, pollMs);
  timer.unref();
  return {
    signal: AbortSignal.any([signal, byRun.signal]),
    cancelledByRun: () => hit,
    stop: () => clearInterval(timer),
  };
}
