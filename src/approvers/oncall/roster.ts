/**
 * The on-call roster: who is on call now for a source, as Slack user ids. The answer is cached in Redis
 * for `ttlMs` (default 60 s) so every bot replica and worker agrees and a provider is asked once per source
 * per period whatever the number of cards or clicks: one process takes a short Redis lock and asks, the
 * others wait (bounded) for its answer, and concurrent asks in one process share one request. A failure is
 * cached too (for the provider's Retry-After, else briefly) and resolves to the source's fallback.
 */
import { z } from 'zod';
import type { Logger } from '../../loop/tool-contract.js';
import type { RedisClient } from '../../store/scripts.js';
import { opsgenieOncallEmails } from './opsgenie.js';
import { pagerdutyOncallEmails } from './pagerduty.js';
import { OncallLookupError } from './provider-http.js';
import type { OncallNow, OncallRoster } from './roster-port.js';
import { type OncallSource, sourceKey } from './source.js';

export interface OncallRosterOptions {
  redis: RedisClient;
  /** Prefix of the cache keys (the store's, without braces): `<prefix>:oncall:<source>`. */
  keyPrefix: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Slack `users.lookupByEmail`: the user id, or null when Slack has nobody with that email. */
  slackUserByEmail: (email: string) => Promise<string | null>;
  logger: Logger;
  /** How long an answer is trusted. Default 60 s (policy `approvals.oncallCacheSeconds`). */
  ttlMs?: number;
  /** One provider request's time limit. Default 5 s. */
  timeoutMs?: number;
}

const DEFAULT_ONCALL_URLS = {
  PAGERDUTY_API_URL: 'https://api.pagerduty.com',
  OPSGENIE_API_URL: 'https://api.opsgenie.com',
} as const;

/** How long a failure is remembered when the provider did not say (Retry-After wins, up to 5 minutes). */
const FAILURE_TTL_MS = 10_000;
const MAX_RETRY_AFTER_MS = 5 * 60_000;
const POLL_MS = 25;

const cachedAnswer = z.union([
  z.strictObject({ ok: z.literal(true), users: z.array(z.string()) }),
  z.strictObject({ ok: z.literal(false), why: z.string() }),
]);

async function emailsFor(source: OncallSource, o: OncallRosterOptions, timeoutMs: number): Promise<string[]> {
  const token = o.env[source.tokenEnv];
  if (!token) throw new OncallLookupError('no_token', `environment variable ${source.tokenEnv} is not set`);
  if (source.provider === 'pagerduty') {
    const baseUrl = o.env.PAGERDUTY_API_URL || DEFAULT_ONCALL_URLS.PAGERDUTY_API_URL;
    return pagerdutyOncallEmails(source, { baseUrl, token, timeoutMs });
  }
  const baseUrl = o.env.OPSGENIE_API_URL || DEFAULT_ONCALL_URLS.OPSGENIE_API_URL;
  return opsgenieOncallEmails(source, { baseUrl, token, timeoutMs });
}

/** Asks the provider and Slack; never throws. Returns the answer and how long to keep it. */
async function ask(
  source: OncallSource,
  o: OncallRosterOptions,
  ttlMs: number,
): Promise<[OncallNow, number]> {
  try {
    const emails = await emailsFor(source, o, o.timeoutMs ?? 5_000);
    const ids = await Promise.all(emails.map((email) => o.slackUserByEmail(email)));
    const users = [...new Set(ids.filter((id): id is string => id !== null))];
    if (emails.length > 0 && users.length === 0) {
      return [{ ok: false, why: 'nobody on call has a Slack account with the same email' }, ttlMs];
    }
    return [{ ok: true, users }, ttlMs];
  } catch (err) {
    const failure = err instanceof OncallLookupError ? err : undefined;
    const why = failure?.message ?? `the lookup failed (${(err as Error).message})`;
    o.logger.warn(
      { source: sourceKey(source), code: failure?.code ?? 'slack_error', why },
      'on-call lookup failed',
    );
    const keep = Math.min(failure?.retryAfterMs ?? Math.min(FAILURE_TTL_MS, ttlMs), MAX_RETRY_AFTER_MS);
    return [{ ok: false, why }, Math.max(1, keep)];
  }
}

export function createOncallRoster(o: OncallRosterOptions): OncallRoster {
  const ttlMs = o.ttlMs ?? 60_000;
  const inFlight = new Map<string, Promise<OncallNow>>();
  const keyOf = (source: OncallSource) => `${o.keyPrefix}:oncall:${sourceKey(source)}`;
  const cached = async (key: string): Promise<OncallNow | null> => {
    const raw = await o.redis.get(key);
    if (raw === null) return null;
    const parsed = cachedAnswer.safeParse(JSON.parse(raw));
    // A damaged entry is asked again rather than trusted.
    return parsed.success ? parsed.data : null;
  };

  const resolve = async (source: OncallSource): Promise<OncallNow> => {
    const key = keyOf(source);
    const timeoutMs = o.timeoutMs ?? 5_000;
    const deadline = Date.now() + timeoutMs * 2;
    for (;;) {
      const hit = await cached(key);
      if (hit) return hit;
      // One process per source asks; the lock outlives one request, so a dead holder frees it soon.
      if ((await o.redis.set(`${key}:lock`, '1', 'PX', timeoutMs + 1_000, 'NX')) === 'OK') {
        const [answer, keepMs] = await ask(source, o, ttlMs);
        await o.redis.set(key, JSON.stringify(answer), 'PX', keepMs);
        await o.redis.del(`${key}:lock`);
        return answer;
      }
      if (Date.now() > deadline) return { ok: false, why: 'another process is still asking the provider' };
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  };

  return {
    now(source) {
      const key = keyOf(source);
      const pending = inFlight.get(key);
      if (pending) return pending;
      const p = resolve(source)
        .catch((err: Error): OncallNow => ({ ok: false, why: `the on-call cache failed (${err.message})` }))
        .finally(() => inFlight.delete(key));
      inFlight.set(key, p);
      return p;
    },
  };
}
