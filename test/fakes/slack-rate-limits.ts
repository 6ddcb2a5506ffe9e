/**
 * Slack's documented Web API rate limits, enforced by the fake Slack when a test opts in
 * (`startFakeSlack({ rateLimits: true })`): beyond a method's rate the fake answers HTTP 429 with
 * `Retry-After` (whole seconds), as Slack does.
 *
 * Where the numbers come from: /work/shared/platform-notes.md, "Slack Web API" and "Added for the third
 * wave" (checked against docs.slack.dev): limits are per app per workspace per method, Tier 2 about
 * 20/min, Tier 3 about 50/min, Tier 4 about 100/min, "short bursts tolerated"; `chat.postMessage` about
 * 1 message/s per channel. Slack does not publish the burst size; the fake tolerates about a tenth of a
 * minute's calls at once (at least 2), and 3 posts at once in a channel.
 *
 * Each limit is a GCRA (a leaky bucket without a timer): a call at `now` passes when `now >= tat - burst *
 * interval`, and moves `tat` one interval on. A refused call does not move it.
 */
export interface FakeRateLimit {
  /** Calls per minute. */
  perMinute: number;
  /** Calls tolerated at once above the steady rate. */
  burst: number;
  /** `workspace`: one limit per method; `channel`: one per method and channel. */
  scope: 'workspace' | 'channel';
}

const tier = (perMinute: number): FakeRateLimit => ({
  perMinute,
  burst: Math.max(2, Math.round(perMinute / 10)),
  scope: 'workspace',
});

/** Slack's tiers of the methods loopgate calls (platform-notes.md). Other methods are not limited. */
export const SLACK_DOCUMENTED_LIMITS: Readonly<Record<string, FakeRateLimit>> = {
  'chat.postMessage': { perMinute: 60, burst: 3, scope: 'channel' },
  'chat.startStream': tier(20),
  'chat.stopStream': tier(20),
  'chat.appendStream': tier(100),
  'chat.update': tier(50),
  'chat.delete': tier(50),
  'chat.postEphemeral': tier(100),
  'chat.getPermalink': tier(100),
  'reactions.add': tier(50),
  'reactions.remove': tier(20),
  'agents.sessions.setStatus': tier(50),
  'agents.sessions.rename': tier(50),
  'assistant.threads.setStatus': tier(50),
  'assistant.threads.setTitle': tier(50),
  'assistant.threads.setSuggestedPrompts': tier(50),
  'views.open': tier(100),
  'views.update': tier(100),
  'views.publish': tier(100),
  'usergroups.users.list': tier(20),
  'users.info': tier(100),
  'users.lookupByEmail': tier(50),
  'conversations.members': tier(100),
  'conversations.info': tier(50),
};

export type RateVerdict = { ok: true } | { ok: false; retryAfterSec: number };

/** The fake's limiter: one GCRA per method (and channel, for posts). */
export class FakeRateLimiter {
  private readonly tats = new Map<string, number>();
  /** 429s answered, by method. */
  readonly refused = new Map<string, number>();

  constructor(
    private readonly limits: Readonly<Record<string, FakeRateLimit>> = SLACK_DOCUMENTED_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  check(method: string, channel: string | undefined): RateVerdict {
    const limit = this.limits[method];
    if (!limit) return { ok: true };
    const key = limit.scope === 'channel' ? `${method} ${channel ?? ''}` : method;
    const interval = 60_000 / limit.perMinute;
    const now = this.now();
    const tat = Math.max(this.tats.get(key) ?? now, now);
    const allowedAt = tat - limit.burst * interval;
    if (now < allowedAt) {
      this.refused.set(method, (this.refused.get(method) ?? 0) + 1);
      return { ok: false, retryAfterSec: Math.max(1, Math.ceil((allowedAt - now) / 1000)) };
    }
    this.tats.set(key, tat + interval);
    return { ok: true };
  }
}
