/**
 * `npm run bot`: the Bolt app as a process. Reads the environment (the bot needs SLACK_BOT_TOKEN and
 * SLACK_SIGNING_SECRET) and the policy file, connects to Redis, and serves Slack on PORT (or Socket Mode).
 * A configuration error names each bad key and exits 1. SIGTERM or SIGINT stops receiving, lets running
 * tasks finish, closes the queue and Redis, and exits 0; a shutdown that hangs is cut short (exit 1).
 */
import { loadEnv } from '../config/env.js';
import { exitOnConfigError } from '../config/errors.js';
import { loadPolicy } from '../config/policy.js';
import { createLogger } from '../log/logger.js';
import { createRedisConnection, createRunsQueue } from '../queue/index.js';
import { createStore } from '../store/index.js';
import { createBotApp } from './app.js';

const DAY_MS = 86_400_000;
/** Longest graceful shutdown before the process exits anyway. */
const SHUTDOWN_LIMIT_MS = 10_000;

const { env, policy } = await exitOnConfigError(async () => {
  const env = loadEnv(process.env, { need: 'bot' });
  return { env, policy: await loadPolicy(env.LOOPGATE_CONFIG) };
});

const logger = createLogger({ level: env.LOG_LEVEL, service: 'loopgate-bot' });
const storeRedis = createRedisConnection(env.REDIS_URL, 'store');
const producer = createRedisConnection(env.REDIS_URL, 'producer');
for (const [role, connection] of [
  ['store', storeRedis],
  ['producer', producer],
] as const) {
  connection.on('error', (err: Error) => logger.warn({ err, role }, 'redis connection error'));
}
const store = createStore(storeRedis, {
  prefix: env.LOOPGATE_PREFIX,
  retentionMs: env.RETENTION_DAYS * DAY_MS,
});
const queue = createRunsQueue(producer, env.LOOPGATE_PREFIX);
queue.on('error', (err: Error) => logger.warn({ err }, 'runs queue error'));

// A bad token (auth.test refused) or a port in use: one clear log line, exit 1.
const bot = await createBotApp({ env, policy, store, queue, redis: [storeRedis, producer], logger }).catch(
  failedToStart,
);
const { port } = await bot.start().catch(failedToStart);
logger.info({ port, mode: bot.mode, policy: policy.source }, 'loopgate bot started');

function failedToStart(err: unknown): never {
  logger.fatal({ err }, 'loopgate bot could not start');
  process.exit(1);
}

let stopping = false;
async function shutdown(signal: NodeJS.Signals): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'loopgate bot stopping');
  const limit = setTimeout(() => {
    logger.error({ limitMs: SHUTDOWN_LIMIT_MS }, 'shutdown took too long; exiting');
    process.exit(1);
  }, SHUTDOWN_LIMIT_MS);
  limit.unref();
  await bot.stop(SHUTDOWN_LIMIT_MS / 2);
  await queue.close();
  // A connection that is already down has nothing left to flush.
  await Promise.allSettled([storeRedis.quit(), producer.quit()]);
  logger.info('loopgate bot stopped');
  process.exit(0);
}
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    shutdown(signal).catch((err: unknown) => {
      logger.error({ err }, 'shutdown failed');
      process.exit(1);
    });
  });
}
