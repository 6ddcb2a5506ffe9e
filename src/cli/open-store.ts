import { createStore, type Store } from '../store/index.js';
import { loadCliEnv } from './env.js';
import { connectRedis } from './redis.js';

const DAY_MS = 86_400_000;

/** The run store as the bot and the workers open it: same Redis, prefix and retention. */
export async function openStore(
  env: Readonly<Record<string, string | undefined>>,
): Promise<{ store: Store; close(): Promise<void> }> {
  const { REDIS_URL, LOOPGATE_PREFIX, RETENTION_DAYS } = loadCliEnv(env);
  const redis = await connectRedis(REDIS_URL);
  return {
    store: createStore(redis, { prefix: LOOPGATE_PREFIX, retentionMs: RETENTION_DAYS * DAY_MS }),
    close: async () => {
      await redis.quit();
    },
  };
}
