import type { StoreContext } from '../context.js';

/** `fresh`: this call counted the event (an earlier delivery of it had not). */
export type RateVerdict = { ok: true; fresh: boolean } | { ok: false; fresh: boolean; retryAfterMs: number };

/** One inbound event, as the limits count it. */
export interface CountedEvent {
  /** Slack's event id: every delivery of an event (Slack's retries) carries the same one. */
  eventId: string;
  /** When the message was written (Slack's message ts, in ms): the window it counts in. */
  at: number;
  /** Now, for the time until the window ends. */
  now: number;
}

/**
 * How long after its window a window's set is kept, so that Slack's last retry of an event (about five
 * minutes after the first delivery) finds it counted rather than counting it again.
 */
const RETRY_HORIZON_MS = 10 * 60_000;

/**
 * Fixed-window limits on inbound messages (per user, per thread). Each window is a sorted set of the
 * event ids counted in it, in the order they were first seen, so an event counts once whichever of its
 * deliveries arrives first (a first delivery that timed out before being counted, or a retry of a
 * refused one, gets the verdict its place earns), and the window is the one the message was written
 * in, so a retry minutes later counts in the same window. An event is allowed when fewer than `limit`
 * events came before it in its window. A window expires after it ended and Slack's retries are over;
 * a burst at a window's edge may pass up to twice the limit.
 */
export class RateLimits {
  constructor(private readonly ctx: StoreContext) {}

  /** Counts `event` for `kind`/`parts` once; refused when `limit` events came before it in its window. */
  async hit(
    kind: 'user' | 'thread',
    parts: readonly string[],
    limit: number,
    windowMs: number,
    event: CountedEvent,
  ): Promise<RateVerdict> {
    const start = event.at - (event.at % windowMs);
    const key = this.ctx.keys.rate(kind, parts, start);
    const replies = await this.ctx.redis
      .multi()
      .zadd(key, 'NX', event.now, event.eventId)
      .pexpireat(key, start + windowMs + RETRY_HORIZON_MS)
      .zrank(key, event.eventId)
      .exec();
    const fresh = Number(replies?.[0]?.[1]) === 1;
    const rank = Number(replies?.[2]?.[1]);
    if (Number.isInteger(rank) && rank < limit) return { ok: true, fresh };
    return { ok: false, fresh, retryAfterMs: Math.max(1_000, start + windowMs - event.now) };
  }
}
