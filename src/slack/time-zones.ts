/**
 * Requesters' time zones from Slack (`users.info` → `user.tz`), so that `current_time` answers in the
 * asker's own time. Cached per user (people rarely move); concurrent lookups of one user share one call.
 * A lookup never holds a run up for long: past `waitMs` the run starts without a zone (the tool falls back
 * to UTC) and a late answer still fills the cache for the next run. Failures (e.g. the app lacks the
 * `users:read` scope) are logged once per error code and cached briefly. A lookup skipped because Slack's
 * rate budget had no room (a storm of new askers) is neither logged nor cached: the next run asks again.
 */
import { z } from 'zod';
import type { Clock } from '../loop/ports.js';
import type { Logger } from '../loop/tool-contract.js';
import { slackErrorCode } from './errors.js';
import { SlackBudgetExhausted } from './rate/slack-budget.js';

export interface TimeZoneLookupOptions {
  /** `users.info` for one user; the raw Web API reply. Rejects with SlackBudgetExhausted to skip it. */
  usersInfo: (userId: string) => Promise<unknown>;
  clock: Clock;
  logger: Logger;
  /** How long a known zone is trusted. Default 6 hours. */
  ttlMs?: number;
  /** How long a failed lookup is remembered. Default 5 minutes. */
  failureTtlMs?: number;
  /** Longest wait for Slack before going on without a zone. Default 1.5 s. */
  waitMs?: number;
}

type TimeZoneLookup = (userId: string) => Promise<string | undefined>;

const usersInfoReply = z.object({ user: z.object({ tz: z.string().min(1).max(100).optional() }) });

export function createTimeZoneLookup(options: TimeZoneLookupOptions): TimeZoneLookup {
  const ttlMs = options.ttlMs ?? 6 * 3_600_000;
  const failureTtlMs = options.failureTtlMs ?? 5 * 60_000;
  const waitMs = options.waitMs ?? 1_500;
  const cache = new Map<string, { zone: string | undefined; until: number }>();
  const inFlight = new Map<string, Promise<string | undefined>>();
  const warned = new Set<string>();

  const lookup = (userId: string): Promise<string | undefined> => {
    const running = inFlight.get(userId);
    if (running) return running;
    const started = options
      .usersInfo(userId)
      .then((reply) => {
        const zone = usersInfoReply.parse(reply).user.tz;
        cache.set(userId, { zone, until: options.clock.now() + ttlMs });
        return zone;
      })
      .catch((err: unknown) => {
        if (err instanceof SlackBudgetExhausted) return undefined;
        const code = err instanceof z.ZodError ? 'unreadable_reply' : slackErrorCode(err);
        if (!warned.has(code)) {
          warned.add(code);
          options.logger.warn(
            { err, user: userId, code },
            "could not look up the requester's time zone (users.info); current_time falls back to UTC",
          );
        }
        cache.set(userId, { zone: undefined, until: options.clock.now() + failureTtlMs });
        return undefined;
      })
      .finally(() => inFlight.delete(userId));
    inFlight.set(userId, started);
    return started;
  };

  return async (userId) => {
    const cached = cache.get(userId);
    if (cached && cached.until > options.clock.now()) return cached.zone;
    let timer: NodeJS.Timeout | undefined;
    const giveUp = new Promise<undefined>((resolve) => {
      timer = setTimeout(resolve, waitMs, undefined);
      timer.unref();
    });
    try {
      return await Promise.race([lookup(userId), giveUp]);
    } finally {
      clearTimeout(timer);
    }
  };
}
