import type { Logger } from '../loop/tool-contract.js';
import { StoreError } from '../store/errors.js';
import type { WorkerRuntime } from './runtime.js';

export type AdvanceResult = { type: 'done' } | { type: 'busy'; retryInMs: number };

export interface HeldLease {
  /** Fencing token: every state-changing write of the holder carries it. */
  fence: number;
  /**
   * A renewal failed, or none was confirmed for a whole lease time (a starved event loop): another job
   * may hold the run now, so this one must not start anything more (the next fenced write would be
   * refused anyway, but a model call made before it would be paid twice).
   */
  lost(): boolean;
}

/**
 * Runs `body` holding the run's lease, renewed while it runs and released after. When another job holds
 * the lease the job is to be retried later (`busy`); a run that no longer exists is `done`.
 */
export async function withRunLease(
  rt: WorkerRuntime,
  runId: string,
  jobId: string,
  log: Logger,
  body: (lease: HeldLease) => Promise<AdvanceResult>,
): Promise<AdvanceResult> {
  let lease: Awaited<ReturnType<typeof rt.store.leases.acquire>>;
  try {
    lease = await rt.store.leases.acquire(runId, `${rt.workerId}/${jobId}`, rt.leaseTtlMs);
  } catch (err) {
    if (err instanceof StoreError && err.code === 'not_found') {
      log.warn({}, 'run not found (expired or never created); nothing to do');
      return { type: 'done' };
    }
    throw err;
  }
  if (!lease.acquired) {
    log.info(
      { holder: lease.holder, remainingMs: lease.remainingMs },
      'run is leased by another job; retrying later',
    );
    return { type: 'busy', retryInMs: Math.max(50, Math.min(lease.remainingMs, rt.leaseTtlMs)) + 25 };
  }
  const { fence } = lease;
  let lost = false;
  // When the lease was last known to run for a whole ttl from: the renewal's sending time, conservatively.
  let confirmedFrom = Date.now();
  const renewal = setInterval(
    () => {
      const sentAt = Date.now();
      rt.store.leases.renew(runId, fence, rt.leaseTtlMs).then(
        () => {
          confirmedFrom = Math.max(confirmedFrom, sentAt);
        },
        (err: unknown) => {
          lost = true;
          log.warn({ err }, 'lease renewal failed; the next checkpoint will stop this job');
        },
      );
    },
    Math.max(100, Math.floor(rt.leaseTtlMs / 3)),
  );
  try {
    return await body({ fence, lost: () => lost || Date.now() - confirmedFrom >= rt.leaseTtlMs });
  } finally {
    clearInterval(renewal);
    await rt.store.leases
      .release(runId, fence)
      .catch((err: unknown) => log.warn({ err }, 'could not release the lease'));
  }
}
