import { loadEnv } from '../config/env.js';
import { loadPolicy } from '../config/policy.js';
import { createLogger } from '../log/logger.js';
import { createRedisConnection } from '../queue/connection.js';
import { createRunsQueue } from '../queue/runs-queue.js';
import { createStore } from '../store/store.js';
import { buildWorkerRuntime } from './build-runtime.js';
import { closeWorker, createRunWorker } from './run-worker.js';

/** How long a stopping worker waits for its current steps before it exits anyway. */
const SHUTDOWN_GRACE_MS = 25_000;

/**
 * Starts a worker in this process: it takes jobs until SIGTERM/SIGINT, then stops taking jobs, lets the
 * current steps finish (each job yields its run at the next step boundary, for another worker to
 * continue) and exits.
 */
export async function startWorker() {
  const env = loadEnv(process.env, { need: 'worker' });
  const policy = await loadPolicy(env.LOOPGATE_CONFIG);
  const logger = createLogger({ level: env.LOG_LEVEL, service: 'loopgate-worker' });
  const storeConnection = createRedisConnection(env.REDIS_URL, 'store');
  const producer = createRedisConnection(env.REDIS_URL, 'worker');
  const workerConnection = createRedisConnection(env.REDIS_URL, 'worker');
  const store = createStore(storeConnection, {
    prefix: env.LOOPGATE_PREFIX,
    retentionMs: env.RETENTION_DAYS * 86_400_000,
  });
  const queue = createRunsQueue(producer, env.LOOPGATE_PREFIX);
  let stopping = false;
  const rt = await buildWorkerRuntime({ env, policy, logger, store, queue, stopping: () => stopping });
  const worker = createRunWorker(rt, workerConnection, {
    concurrency: env.WORKER_CONCURRENCY,
    lockDurationMs: env.WORKER_LOCK_MS,
    stalledIntervalMs: Math.max(500, Math.floor(env.WORKER_LOCK_MS / 2)),
    prefix: env.LOOPGATE_PREFIX,
  });
  worker.run().catch((err: unknown) => logger.error({ err }, 'worker stopped with an error'));
  logger.info(
    { workerId: rt.workerId, concurrency: env.WORKER_CONCURRENCY, tools: [...rt.tools.keys()] },
    'worker started',
  );

  const stop = async (signal: string) => {
    logger.info({ signal }, 'stopping: no new jobs, finishing current steps');
    stopping = true;
    const result = await closeWorker(worker, SHUTDOWN_GRACE_MS);
    if (result === 'timed_out')
      logger.warn({}, 'current steps did not finish in time; their jobs will be recovered');
    await queue.close().catch(() => {});
    for (const c of [storeConnection, producer, workerConnection]) c.disconnect();
    logger.info({}, 'worker stopped');
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  return { worker, rt };
}
