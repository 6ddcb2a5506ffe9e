/**
 * A channel's name and kind from Slack's conversations.info, for per-channel permissions
 * (src/policy/channel-rules.ts). Cached in memory for `ttlMs`, so a busy channel costs one lookup per
 * period and a rename or a conversion to private shows within it. A failed lookup (channel_not_found,
 * missing scope, Slack down) is not cached and yields `kind: null`: the rules then fail closed.
 */
import { z } from 'zod';
import type { ChannelFacts, ChannelKind } from '../policy/channel-rules.js';

/** What loopgate reads of Slack's `conversations.info` answer (every other field is ignored). */
const infoReply = z.looseObject({
  channel: z.looseObject({
    id: z.string(),
    name: z.string().optional(),
    is_im: z.boolean().optional(),
    is_mpim: z.boolean().optional(),
    is_private: z.boolean().optional(),
  }),
});

interface ChannelFactsOptions {
  /** Slack's conversations.info for one channel id; rejects when Slack refuses. */
  info(channel: string): Promise<unknown>;
  clock: { now(): number };
  /** How long an answer is trusted; default 60 s. */
  ttlMs?: number;
  /** Told why a lookup failed (the rules fail closed meanwhile). */
  onFailure?(channel: string, err: unknown): void;
}

export type ChannelFactsLookup = (channelId: string) => Promise<ChannelFacts>;

const kindOf = (c: z.infer<typeof infoReply>['channel']): ChannelKind =>
  c.is_im ? 'dm' : c.is_mpim ? 'mpim' : c.is_private ? 'private' : 'public';

/** Facts from one conversations.info answer (exported for tests of the answer's shape). */
function factsFromInfo(channelId: string, reply: unknown): ChannelFacts {
  const { channel } = infoReply.parse(reply);
  const kind = kindOf(channel);
  return { id: channelId, kind, ...(kind !== 'dm' && channel.name ? { name: channel.name } : {}) };
}

export function createChannelFacts(options: ChannelFactsOptions): ChannelFactsLookup {
  const ttlMs = options.ttlMs ?? 60_000;
  const cache = new Map<string, { facts: ChannelFacts; until: number }>();
  return async (channelId) => {
    const now = options.clock.now();
    const hit = cache.get(channelId);
    if (hit && hit.until > now) return hit.facts;
    try {
      const facts = factsFromInfo(channelId, await options.info(channelId));
      cache.set(channelId, { facts, until: now + ttlMs });
      return facts;
    } catch (err) {
      options.onFailure?.(channelId, err);
      return { id: channelId, kind: null };
    }
  };
}
