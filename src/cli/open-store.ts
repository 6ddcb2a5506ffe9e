import { redisTarget } from '../config/redis-target.js';
import { refuseClusterNode } from '../queue/cluster-node-check.js';
import { createStore, type Store } from '../store/index.js';
import { loadCliEnv } from './env.js';
import { connectRedis } from './redis.js';

const DAY_MS = 86_400_000;

/** The run store as the bot and the workers open it: same Redis, prefix and retention. */
export async function openStore(
  env: Readonly<Record<string, string | undefined>>,
): Promise<{ store: Store; close(): Promise<void> }> {
  const vars = loadCliEnv(env);
  const { LOOPGATE_PREFIX, RETENTION_DAYS } = vars;
  const redis = await connectRedis(redisTarget(vars));
  await refuseClusterNode(redis).catch((error: unknown) => {
    redis.disconnect();
    throw error;
  });
  return {
    store: createStore(redis, { prefix: LOOPGATE_PREFIX, retentionMs: RETENTION_DAYS * DAY_MS }),
    close: async () => {
      await redis.quit();
    },
  };
}
