import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import type { RedisTarget } from '../config/redis-target.js';

/** A connection of loopgate's: one server, or a Redis Cluster (every process can run on either). */
export type RedisClient = Redis | Cluster;

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
 * On a cluster the same options go to every node's connection (`redisOptions`, where BullMQ looks for
 * `maxRetriesPerRequest: null`), and the offline queue is the Cluster's own (ioredis keeps the nodes'
 * queues on). A cluster has only database 0, so installations sharing one are kept apart by
 * LOOPGATE_PREFIX.
 *
 * Never an ioredis `keyPrefix` (BullMQ throws; the store prefixes its own keys). On the protocol:
 * ioredis 5 speaks RESP2 only, which is what BullMQ 6 is built against; an upgrade to ioredis 6 (RESP3
 * by default) must set `protocol: 2` here.
 */
type ConnectionRole = 'worker' | 'producer' | 'store';

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

type ConnectionOverrides = Omit<RedisOptions, 'keyPrefix' | 'maxRetriesPerRequest' | 'enableOfflineQueue'>;

/**
 * A new ioredis connection for `role`, named `loopgate-<role>` (visible in CLIENT LIST): a `Redis` for a
 * URL or a standalone target, a `Cluster` for a cluster target (src/config/redis-target.ts).
 */
export function createRedisConnection(
  url: string,
  role: ConnectionRole,
  overrides?: ConnectionOverrides,
): Redis;
export function createRedisConnection(
  target: RedisTarget,
  role: ConnectionRole,
  overrides?: ConnectionOverrides,
): RedisClient;
export function createRedisConnection(
  target: string | RedisTarget,
  role: ConnectionRole,
  overrides: ConnectionOverrides = {},
): RedisClient {
  if ('keyPrefix' in overrides) throw new TypeError('loopgate connections must not set keyPrefix');
  const resolved: RedisTarget = typeof target === 'string' ? { kind: 'standalone', url: target } : target;
  const options: RedisOptions = {
    connectionName: `loopgate-${role}`,
    ...credentials(resolved),
    ...overrides,
    ...ROLE_OPTIONS[role],
  };
  if (resolved.kind === 'standalone') return new Redis(resolved.url, options);
  return new Cluster(resolved.nodes, clusterOptions(resolved, options));
}

/**
 * Options of a Cluster whose nodes get `nodeOptions`. With TLS every node is reached over TLS and seed
 * host names are kept as given (not resolved to addresses first), so certificates issued for them match.
 */
export function clusterOptions(
  target: Extract<RedisTarget, { kind: 'cluster' }>,
  nodeOptions: RedisOptions,
): ClusterOptions {
  return {
    ...(nodeOptions.enableOfflineQueue === false ? { enableOfflineQueue: false } : {}),
    redisOptions: { ...nodeOptions, ...(target.tls ? { tls: {} } : {}) },
    ...(target.tls
      ? {
          dnsLookup: (address: string, callback: (err: null, address: string) => void) =>
            callback(null, address),
        }
      : {}),
  };
}

function credentials(target: RedisTarget): Pick<RedisOptions, 'username' | 'password'> {
  return {
    ...(target.username !== undefined ? { username: target.username } : {}),
    ...(target.password !== undefined ? { password: target.password } : {}),
  };
}
