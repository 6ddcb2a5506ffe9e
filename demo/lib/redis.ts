/**
 * The demo's own Redis connection: checks that Redis answers before anything starts (with a hint on how
 * to start one), and deletes every key of a run-through's prefix afterwards.
 */
import { Redis } from 'ioredis';
import { displayUrl } from '../../src/config/redis-target.js';
import { DemoError } from './errors.js';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

const START_HINT =
  'start Redis: redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no ' +
  '(or set REDIS_URL to a Redis you can use)';

/** Connects, failing fast, or throws a DemoError saying how to start Redis. */
export async function connectOrExplain(url: string): Promise<Redis> {
  const redis = new Redis(url, {
    connectionName: 'loopgate-demo',
    lazyConnect: true,
    connectTimeout: 3_000,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
  let lastError: Error | undefined;
  // Surfaced by connect() below; the listener only keeps the error from being unhandled.
  redis.on('error', (error: Error) => {
    lastError = error;
  });
  try {
    await redis.connect();
    await redis.ping();
    return redis;
  } catch (error) {
    redis.disconnect();
    const reason = (lastError ?? (error as Error)).message;
    throw new DemoError(`Redis is not reachable at ${displayUrl(url)} (${reason})\n  → ${START_HINT}`);
  }
}

/**
 * Deletes the keys of `prefix` (`{name}`): BullMQ's keep the braces, the run store's drop them
 * (src/store/keys.ts).
 */
export async function deletePrefixKeys(redis: Redis, prefix: string): Promise<number> {
  const bare = prefix.replace(/[{}]/g, '');
  let deleted = 0;
  for (const pattern of [`${bare}:*`, `${prefix}:*`]) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) deleted += await redis.del(...keys);
    } while (cursor !== '0');
  }
  return deleted;
}
