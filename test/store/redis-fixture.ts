import { randomBytes } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { inject } from 'vitest';
import { createStore, type RedisClient, type Store, type StoreOptions } from '../../src/store/index.js';
import { primaries } from '../../src/store/nodes.js';

export const REDIS_URL = 'redis://127.0.0.1:6379';

/**
 * A connection to the Redis the tests run on: the standalone one, or (in the `store-on-cluster`
 * project, see vitest.config.ts) the local cluster its globalSetup started.
 */
export function testConnection(connectionName?: string): RedisClient {
  const seeds = inject('redisClusterSeeds');
  if (seeds === undefined) return new Redis(REDIS_URL, { connectionName });
  return new Cluster(
    seeds.map((seed) => ({ host: '127.0.0.1', port: Number(seed.split(':')[1]) })),
    { redisOptions: { connectionName } },
  );
}

/** A store on the real Redis under a fresh random prefix; `cleanup` deletes its keys and disconnects. */
export interface StoreFixture {
  redis: RedisClient;
  store: Store;
  prefix: string;
  /** Another connection with its own store (same prefix), for races between processes. */
  connect(): Store;
  cleanup(): Promise<void>;
}

export function storeFixture(options: StoreOptions = {}): StoreFixture {
  const prefix = `lgtest-${randomBytes(6).toString('hex')}`;
  const redis = testConnection(prefix);
  // Tests kill connections on purpose: ioredis reconnects, the error event only needs a listener.
  redis.on('error', () => {});
  const extra: RedisClient[] = [];
  return {
    redis,
    prefix,
    store: createStore(redis, { prefix: `{${prefix}}`, ...options }),
    connect() {
      const other = testConnection();
      other.on('error', () => {});
      extra.push(other);
      return createStore(other, { prefix: `{${prefix}}`, ...options });
    },
    async cleanup() {
      await deleteKeys(redis, `${prefix}:*`);
      await Promise.all([redis, ...extra].map((c) => c.quit()));
    },
  };
}

/** Deletes every key matching `pattern` (on every primary of a cluster; one key per DEL there). */
export async function deleteKeys(redis: RedisClient, pattern: string): Promise<void> {
  for (const node of primaries(redis)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      await Promise.all(keys.map((key) => node.del(key)));
    } while (cursor !== '0');
  }
}

/** Kills (CLIENT KILL) every connection named `name`; returns how many were killed. */
export async function killConnections(killer: RedisClient, name: string): Promise<number> {
  let killed = 0;
  for (const node of primaries(killer)) {
    const list = String(await node.client('LIST'));
    const ids = [...list.matchAll(/^id=(\d+) .*\bname=(\S*)/gm)]
      .filter((m) => m[2] === name)
      .map((m) => m[1]);
    for (const id of ids) killed += Number(await node.client('KILL', 'ID', String(id)));
  }
  return killed;
}

/** Every key of the fixture's prefix. */
export async function keysOf(redis: RedisClient, prefix: string): Promise<string[]> {
  const found: string[] = [];
  for (const node of primaries(redis)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      found.push(...keys);
    } while (cursor !== '0');
  }
  return found.sort();
}
