import { randomUUID } from 'node:crypto';
import type { StoreContext } from './context.js';
import { badReply, replyArray, replyCount } from './decode.js';

export type LeaseResult =
  | { acquired: true; fence: number; ttlMs: number }
  | { acquired: false; holder: string; remainingMs: number };

/**
 * The run lease: at most one worker advances a run at a time (design §4.6). Acquiring issues a fencing
 * token that only ever grows per run; every state-changing script (saveStep, createApprovals,
 * begin/finishExecution) checks it against the live lease, so a worker that lost its lease (a pause
 * longer than the lease, a stalled job picked up elsewhere) can no longer write anything.
 */
export class LeaseStore {
  constructor(private readonly ctx: StoreContext) {}

  /**
   * Takes the lease when nobody holds it. A holder that still has it (even the same worker) gets
   * `acquired: false`: an earlier attempt of the same job may still be running. Throws `not_found`.
   */
  async acquire(runId: string, holder: string, ttlMs: number): Promise<LeaseResult> {
    const keys = this.ctx.keys.run(runId);
    const reply = await this.ctx.script(
      'acquireLease',
      [keys.header, keys.lease],
      [holder, ttlMs, randomUUID()],
    );
    const [token, current, remaining] = replyArray('acquireLease', reply, { runId, holder });
    if (typeof token !== 'number' || typeof remaining !== 'number')
      throw badReply('acquireLease', reply, { runId });
    if (token === -4) return { acquired: false, holder: String(current), remainingMs: remaining };
    return { acquired: true, fence: replyCount('acquireLease', token, { runId }), ttlMs: remaining };
  }

  /** Extends the lease; throws `lease_lost` or `stale_fence` when the caller no longer holds it. */
  async renew(runId: string, fence: number, ttlMs: number): Promise<void> {
    const reply = await this.ctx.script('renewLease', [this.ctx.keys.run(runId).lease], [fence, ttlMs]);
    replyCount('renewLease', reply, { runId, fence });
  }

  /** Gives the lease up; false when the caller did not hold it any more. */
  async release(runId: string, fence: number): Promise<boolean> {
    const reply = await this.ctx.script('releaseLease', [this.ctx.keys.run(runId).lease], [fence]);
    return replyCount('releaseLease', reply, { runId, fence }) === 1;
  }
}
