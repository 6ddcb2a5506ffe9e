import type { StoreContext } from './context.js';

export type RateVerdict = { ok: true } | { ok: false; retryAfterMs: number };

/**
 * Fixed-window counters of inbound messages (per user, per thread). A window's counter expires with
 * the window, so nothing needs cleaning up; a burst at a window's edge may pass up to twice the limit.
 */
export class RateLimits {
  constructor(private readonly ctx: StoreContext) {}

  /** Counts one message for `kind`/`parts` at `now`; refused once the window holds more than `limit`. */
  async hit(
    kind: 'user' | 'thread',
    parts: readonly string[],
    limit: number,
    windowMs: number,
    now: number,
  ): Promise<RateVerdict> {
    const start = now - (now % windowMs);
    const key = this.ctx.keys.rate(kind, parts, start);
    const replies = await this.ctx.redis.multi().incr(key).pexpire(key, windowMs).exec();
    const count = Number(replies?.[0]?.[1]);
    return count <= limit ? { ok: true } : { ok: false, retryAfterMs: start + windowMs - now };
  }
}
