import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createStore, type Store, type StoreOptions } from '../../src/store/index.js';

export const REDIS_URL = 'redis://127.0.0.1:6379';

/** A store on the real Redis under a fresh random prefix; `cleanup` deletes its keys and disconnects. */
export interface StoreFixture {
  redis: Redis;
  store: Store;
  prefix: string;
  /** Another connection with its own store (same prefix), for races between processes. */
  connect(): Store;
  cleanup(): Promise<void>;
}

export function storeFixture(options: StoreOptions = {}): StoreFixture {
  const prefix = `lgtest-${randomBytes(6).toString('hex')}`;
  const redis = new Redis(REDIS_URL, { connectionName: prefix });
  // Tests kill connections on purpose: ioredis reconnects, the error event only needs a listener.
  redis.on('error', () => {});
  const extra: Redis[] = [];
  return {
    redis,
    prefix,
    store: createStore(redis, { prefix: `{${prefix}}`, ...options }),
    connect() {
      const other = new Redis(REDIS_URL);
      extra.push(other);
      return createStore(other, { prefix: `{${prefix}}`, ...options });
    },
    async cleanup() {
      await deleteKeys(redis, `${prefix}:*`);
      await Promise.all([redis, ...extra].map((c) => c.quit()));
    },
  };
}

export async function deleteKeys(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
}

/** Kills (CLIENT KILL) every connection named `name`; returns how many were killed. */
export async function killConnections(killer: Redis, name: string): Promise<number> {
  const list = String(await killer.client('LIST'));
  const ids = [...list.matchAll(/^id=(\d+) .*\bname=(\S*)/gm)].filter((m) => m[2] === name).map((m) => m[1]);
  let killed = 0;
  for (const id of ids) killed += Number(await killer.client('KILL', 'ID', String(id)));
  return killed;
}

/** Every key of the fixture's prefix. */
export async function keysOf(redis: Redis, prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    found.push(...keys);
  } while (cursor !== '0');
  return found.sort();
}
