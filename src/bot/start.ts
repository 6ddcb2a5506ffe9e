import type { Server } from 'node:http';
import { loadEnv } from '../config/env.js';
import { loadPolicy } from '../config/policy.js';
import { configuredSecrets } from '../config/policy-env.js';
import { redisTarget, targetVariable } from '../config/redis-target.js';
import { createLogger, secretRedactor } from '../log/logger.js';
import { startProbeServer } from '../metrics/http.js';
import type { Metrics } from '../metrics/metrics.js';
import { refuseClusterNode } from '../queue/cluster-node-check.js';
import { createRedisConnection, createRunsQueue } from '../queue/index.js';
import { isConnectionError, reportRedisOutages } from '../queue/outage-log.js';
import { createStore } from '../store/index.js';
import type { RunTracer } from '../telemetry/run-tracer.js';
import { startTelemetry } from '../telemetry/sdk.js';
import { metricsFor, startCalendars } from '../worker/start.js';
import { createBotApp } from './app.js';
import { botReadiness, botReadinessReasons } from './health.js';
import { namedSlackError } from './startup-failure.js';

const DAY_MS = 86_400_000;
/** Longest graceful shutdown before the process exits anyway. */
export const BOT_SHUTDOWN_LIMIT_MS = 10_000;

interface StartBotOptions {
  /** Share the registry of another part of the process (`npm start`); else the bot makes its own. */
  metrics?: Metrics;
  /** A tracer made already (null: tracing off); else the bot starts one when OTEL_* asks for it. */
  telemetry?: RunTracer | null;
}

/**
 * Starts the Bolt app in this process: reads the environment (the bot needs SLACK_BOT_TOKEN and
 * SLACK_SIGNING_SECRET) and the policy file, connects to Redis, serves Slack on PORT (or Socket Mode)
 * with a cheap /healthz, and /metrics, /healthz and /readyz on the internal BOT_METRICS_PORT (0: none).
 * `stop` stops receiving, lets running tasks finish, closes the queue and Redis. Throws ConfigError for
 * a bad configuration and for a port in use (naming its variable); any other start-up failure (a token
 * Slack refuses) is thrown too.
 */
export async function startBot(options: StartBotOptions = {}) {
  const env = loadEnv(process.env, { need: 'bot' });
  const policy = await loadPolicy(env.LOOPGATE_CONFIG);
  const secrets = secretRedactor(configuredSecrets(policy, process.env));
  const logger = createLogger({ level: env.LOG_LEVEL, service: 'loopgate-bot', secrets });
  const telemetry =
    options.telemetry === undefined
      ? await startTelemetry({ service: 'loopgate-bot', env: process.env, logger, redact: secrets.text })
      : options.telemetry;
  const redis = redisTarget(env);
  const storeRedis = createRedisConnection(redis, 'store');
  const producer = createRedisConnection(redis, 'producer');
  reportRedisOutages([storeRedis, producer], redis, logger);
  await refuseClusterNode(storeRedis);
  const store = createStore(storeRedis, {
    prefix: env.LOOPGATE_PREFIX,
    retentionMs: env.RETENTION_DAYS * DAY_MS,
    maxQueuedPerThread: policy.inbound.maxQueuedPerThread,
    waitReplicas: env.REDIS_WAIT_REPLICAS,
    waitTimeoutMs: env.REDIS_WAIT_TIMEOUT_MS,
  });
  const queue = createRunsQueue(producer, env.LOOPGATE_PREFIX);
  queue.on('error', (err: Error) => {
    if (!isConnectionError(err)) logger.warn({ err }, 'runs queue error');
  });
  const metrics = options.metrics ?? metricsFor(store, queue);
  const calendars = await startCalendars(policy, store, logger);

  const bot = await createBotApp({
    env,
    policy,
    store,
    queue,
    logger,
    metrics,
    ...(telemetry ? { telemetry } : {}),
  }).catch((err: unknown) => {
    // auth.test of the bot token runs while the app is created.
    throw namedSlackError(err, 'SLACK_BOT_TOKEN');
  });
  let probes: Server | undefined;
  if (env.BOT_METRICS_PORT !== 0) {
    probes = await startProbeServer({
      registry: metrics.registry,
      readiness: botReadiness([storeRedis, producer], queue),
      reasons: botReadinessReasons(targetVariable(redis)),
      // Not a readiness matter: such a worker takes jobs; its operator should know it is unwatched.
      details: async () => ({ workersWithoutMetrics: await store.workerNotices.withoutMetrics() }),
      port: env.BOT_METRICS_PORT,
      portVariable: 'BOT_METRICS_PORT',
    });
  }
  const { port } = await bot.start().catch((err: unknown) => {
    probes?.close();
    // Starting opens the Socket Mode connection with the app-level token.
    throw env.SLACK_APP_TOKEN !== undefined ? namedSlackError(err, 'SLACK_APP_TOKEN') : err;
  });
  logger.info(
    { port, metricsPort: env.BOT_METRICS_PORT, mode: bot.mode, policy: policy.source },
    'loopgate bot started',
  );

  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      logger.info({}, 'loopgate bot stopping');
      await bot.stop(BOT_SHUTDOWN_LIMIT_MS / 2);
      probes?.close();
      calendars.stop();
      await queue.close();
      // A connection that is already down has nothing left to flush.
      await Promise.allSettled([storeRedis.quit(), producer.quit()]);
      // The spans still buffered are sent before the process exits.
      await telemetry?.shutdown().catch((err: unknown) => logger.warn({ err }, 'traces not flushed'));
      logger.info({}, 'loopgate bot stopped');
    })();
    return stopped;
  };
  return { bot, port, logger, metrics, telemetry, stop };
}
