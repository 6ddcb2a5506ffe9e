import { Redis, type RedisOptions } from 'ioredis';

/**
 * What a connection is for:
 * - `worker`: BullMQ Workers (blocking commands). `maxRetriesPerRequest: null`, as BullMQ requires:
 *   commands wait through reconnections instead of failing.
 * - `producer`: adding jobs from the bot's request path. `enableOfflineQueue: false` and few retries, so
 *   an add fails fast while Redis is down instead of hanging the Slack handler.
 * - `store`: the run store. Commands issued during a reconnection are queued, and commands whose reply
 *   was lost are resent after it (ioredis `autoResendUnfulfilledCommands`); the store's scripts carry a
 *   nonce so a resent write is recognised and applied once. Bounded retries (20) so a long outage
 *   fails the job (BullMQ retries it) instead of hanging it. Commands issued in the same tick go out
 *   in one write (ioredis `enableAutoPipelining`): with hundreds of runs in flight a write per command
 *   was a large part of a worker's CPU. The store issues no blocking commands.
 *
 * Never an ioredis `keyPrefix` (BullMQ throws; the store prefixes its own keys). On the protocol:
 * ioredis 5 speaks RESP2 only, which is what BullMQ 6 is built against; an upgrade to ioredis 6 (RESP3
 * by default) must set `protocol: 2` here.
 */
export type ConnectionRole = 'worker' | 'producer' | 'store';

const ROLE_OPTIONS: Record<ConnectionRole, RedisOptions> = {
  worker: { maxRetriesPerRequest: null },
  producer: { maxRetriesPerRequest: 2, enableOfflineQueue: false },
  store: {
    maxRetriesPerRequest: 20,
    enableOfflineQueue: true,
    autoResendUnfulfilledCommands: true,
    enableAutoPipelining: true,
  },
};

export type ConnectionOverrides = Omit<
  RedisOptions,
  'keyPrefix' | 'maxRetriesPerRequest' | 'enableOfflineQueue'
>;

/** A new ioredis connection for `role`, named `loopgate-<role>` (visible in CLIENT LIST). */
export function createRedisConnection(
  url: string,
  role: ConnectionRole,
  overrides: ConnectionOverrides = {},
): Redis {
  if ('keyPrefix' in overrides) throw new TypeError('loopgate connections must not set keyPrefix');
  return new Redis(url, { connectionName: `loopgate-${role}`, ...overrides, ...ROLE_OPTIONS[role] });
}
