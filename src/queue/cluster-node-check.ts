import { Cluster } from 'ioredis';
import { ConfigError } from '../config/errors.js';
import type { RedisClient } from './connection.js';

/**
 * Stops start-up when REDIS_URL points at a node of a Redis Cluster: a standalone connection there gets
 * MOVED for the keys of every other node, so questions go unanswered and each command fails. Asks the
 * server (`INFO cluster`); when it does not answer within `timeoutMs` (Redis down at start-up) the check
 * is skipped and the process waits for Redis as before.
 * @throws ConfigError naming REDIS_URL and what to set instead.
 */
export async function refuseClusterNode(redis: RedisClient, timeoutMs = 2_000): Promise<void> {
  if (redis instanceof Cluster) return;
  let timer: NodeJS.Timeout | undefined;
  const info = await Promise.race([
    redis.info('cluster').catch(() => null),
    new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), timeoutMs);
    }),
  ]);
  clearTimeout(timer);
  if (info !== null && /^cluster_enabled:1\b/m.test(info)) {
    throw new ConfigError('environment', [
      {
        key: 'REDIS_URL',
        problem:
          'points at a node of a Redis Cluster; set REDIS_CLUSTER_NODES=host:port,... (its seed nodes) instead and leave REDIS_URL unset',
      },
    ]);
  }
}
