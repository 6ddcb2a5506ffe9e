import type { Server } from 'node:http';
import { loadEnv } from '../config/env.js';
import { ConfigError } from '../config/errors.js';
import { loadPolicy } from '../config/policy.js';
import { configuredSecrets } from '../config/policy-env.js';
import { redisTarget, targetVariable } from '../config/redis-target.js';
import { createLogger, secretRedactor } from '../log/logger.js';
import { startProbeServer } from '../metrics/http.js';
import { createMetrics, type Metrics } from '../metrics/metrics.js';
import { refuseClusterNode } from '../queue/cluster-node-check.js';
import { createRedisConnection } from '../queue/connection.js';
import { isConnectionError, reportRedisOutages } from '../queue/outage-log.js';
import { createRunsQueue, type RunsQueue } from '../queue/runs-queue.js';
import type { Store } from '../store/store.js';
import { createStore } from '../store/store.js';
import type { RunTracer } from '../telemetry/run-tracer.js';
import { startTelemetry } from '../telemetry/sdk.js';
import { customToolSecrets } from '../tools/registry.js';
import { buildWorkerRuntime } from './build-runtime.js';
import { CancelWatch } from './cancel-watch.js';
import { inFlightJobs } from './hand-back.js';
import { type LoadGate, startLoadGate } from './load-gate.js';
import { announceNoMetrics, type NoMetricsAnnouncement } from './no-metrics-notice.js';
import { RequesterSlots } from './requester-slots.js';
import { closeWorker, createRunWorker } from './run-worker.js';

/**
 * How long a stopping worker waits for its current steps; then it hands their jobs back to the queue and
 * exits. Keep the orchestrator's grace period above SHUTDOWN_LIMIT_MS.
 */
const SHUTDOWN_GRACE_MS = 25_000;
/**
 * Longest shutdown of all before the process exits anyway: the grace period, then 3 s to hand jobs back
 * and close connections.
 */
export const SHUTDOWN_LIMIT_MS = 28_000;

/** Gauges read at scrape time from Redis: pending approvals and queue depth. */
export function metricsFor(store: Store, queue: RunsQueue): Metrics {
  return createMetrics({
    pendingApprovals: () => store.context.redis.zcard(store.context.keys.pendingApprovals),
    queueCounts: () =>
      queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed', 'prioritized'),
    oldestPendingApprovalSeconds: async () => (await store.approvals.oldestPendingAgeMs(Date.now())) / 1000,
    redisUp: async () => (await store.context.redis.ping()) === 'PONG',
  });
}

export interface StartWorkerOptions {
  /** Share the registry of another part of the process (`npm start`); else the worker makes its own. */
  metrics?: Metrics;
  /** Serve /metrics, /healthz and /readyz on METRICS_PORT. Default true. */
  serveProbes?: boolean;
  /** Stop on SIGTERM/SIGINT and exit the process. Default true. */
  handleSignals?: boolean;
  /** Share the bot's tracer (`npm start`); else the worker starts its own when OTEL_* asks for one. */
  telemetry?: RunTracer | null;
}

/**
 * Starts a worker in this process: it takes jobs until stopped, then stops taking jobs, lets the
 * current steps finish (each job hands its run back at the next step boundary, for another worker to
 * continue) and closes its connections.
 */
// biome-ignore lint/complexity/noExcessiveLinesPerFunction: a long function issue 25 splits next
export async function startWorker(options: StartWorkerOptions = {}) {
  const env = loadEnv(process.env, { need: 'worker' });
  const policy = await loadPolicy(env.LOOPGATE_CONFIG);
  // Every configured secret, so logs and tool failures never show one whatever holds it.
  const secrets = secretRedactor([
    ...configuredSecrets(policy, process.env),
    ...(await customToolSecrets(policy, process.env)),
  ]);
  const logger = createLogger({ level: env.LOG_LEVEL, service: 'loopgate-worker', secrets });
  const redis = redisTarget(env);
  const storeConnection = createRedisConnection(redis, 'store');
  const producer = createRedisConnection(redis, 'worker');
  const workerConnection = createRedisConnection(redis, 'worker');
  // Given over to subscribe mode: hears of cancelled runs at once (cancel-watch.ts).
  const subscriber = createRedisConnection(redis, 'worker');
  reportRedisOutages([storeConnection, producer, workerConnection, subscriber], redis, logger);
  await refuseClusterNode(storeConnection);
  const store = createStore(storeConnection, {
    prefix: env.LOOPGATE_PREFIX,
    retentionMs: env.RETENTION_DAYS * 86_400_000,
    maxQueuedPerThread: policy.inbound.maxQueuedPerThread,
    waitReplicas: env.REDIS_WAIT_REPLICAS,
    waitTimeoutMs: env.REDIS_WAIT_TIMEOUT_MS,
  });
  const queue = createRunsQueue(producer, env.LOOPGATE_PREFIX);
  // Without a listener BullMQ's queue would rethrow its connection's errors.
  queue.on('error', (err: Error) => {
    if (!isConnectionError(err)) logger.warn({ err }, 'runs queue error');
  });
  const metrics = options.metrics ?? metricsFor(store, queue);
  let stopping = false;
  const telemetry =
    options.telemetry ??
    startTelemetry({ service: 'loopgate-worker', env: process.env, logger, redact: secrets.text });
  const cancels = new CancelWatch({
    isCancelled: (runId) => store.runs.cancelRecorded(runId),
    subscriber,
    channel: store.context.keys.cancels,
    logger,
  });
  // Not spread: the MCP source replaces `rt.tools` when a server's tool list changes.
  const rt = await buildWorkerRuntime({
    env,
    policy,
    logger,
    store,
    queue,
    stopping: () => stopping,
    redact: secrets.text,
    telemetry,
    metrics,
    requesterSlots: new RequesterSlots(env.WORKER_MAX_RUNS_PER_REQUESTER),
    cancels,
  });
  // A subscription that fails leaves the polling, which still stops a cancelled run within a second.
  await cancels
    .start()
    .catch((err: unknown) => logger.warn({ err }, 'cancel channel not subscribed: polling only'));
  const inFlight = inFlightJobs(logger);
  const worker = createRunWorker(rt, workerConnection, {
    inFlight,
    concurrency: env.WORKER_CONCURRENCY,
    lockDurationMs: env.WORKER_LOCK_MS,
    stalledIntervalMs: Math.max(500, Math.floor(env.WORKER_LOCK_MS / 2)),
    prefix: env.LOOPGATE_PREFIX,
  });
  let probes: Server | undefined;
  let noMetrics: NoMetricsAnnouncement | undefined;
  let gate: LoadGate | undefined;
  // A metrics port is not worth an outage: a port in use (a second worker on one host, the new worker of
  // a rolling restart while the old one drains) leaves this worker without probes, saying so, and it
  // takes jobs as usual.
  if (options.serveProbes !== false && env.METRICS_PORT !== 0) {
    probes = await startProbeServer({
      registry: metrics.registry,
      port: env.METRICS_PORT,
      portVariable: 'METRICS_PORT',
      readiness: {
        redis: async () => (await storeConnection.ping()) === 'PONG',
        // Health is jobs flowing, not just PING: the worker's own blocking connection must be up.
        // A worker its load gate holds back is not taking jobs on purpose: its main loop may rest.
        worker: async () =>
          (worker.isRunning() || gate?.admitting() === false) && workerConnection.status === 'ready',
      },
      reasons: {
        redis: `redis: Redis does not answer (check ${targetVariable(redis)} and that Redis is up)`,
        worker:
          'worker: not taking jobs: its queue connection is not ready (Redis unreachable) or it stopped',
      },
      // A missing MCP server does not make the worker unready (its other tools serve); it is listed.
      details: () => ({ mcp: rt.mcp.report() }),
    }).catch((err: unknown) => {
      if (!(err instanceof ConfigError)) throw err;
      logger.warn(
        { variable: 'METRICS_PORT', port: env.METRICS_PORT },
        `METRICS_PORT ${env.METRICS_PORT} is already in use on this host: this worker serves no /metrics, /healthz or /readyz, and takes jobs as usual; give each worker on one host its own METRICS_PORT (or 0 for none)`,
      );
      noMetrics = announceNoMetrics(store.workerNotices, env.METRICS_PORT, logger);
      return undefined;
    });
  }
  worker.run().catch((err: unknown) => logger.error({ err }, 'worker stopped with an error'));
  gate = startLoadGate({
    maxEventLoopDelayMs: env.WORKER_MAX_EVENT_LOOP_DELAY_MS,
    maxHeapUsedRatio: env.WORKER_MAX_HEAP_PERCENT / 100,
    admission: {
      // pause(true): stop fetching without waiting for the jobs in hand, which go on.
      stopTaking: () => void worker.pause(true),
      startTaking: () => void worker.resume(),
    },
    onSample: (sample, admitting) => {
      metrics.eventLoopDelay.set(sample.eventLoopDelayMs / 1000);
      metrics.takingJobs.set(admitting ? 1 : 0);
    },
    onChange: (verdict, sample) =>
      verdict.admit
        ? logger.info({ ...sample }, 'load is back under the limits: taking jobs again')
        : logger.warn({ ...sample, reason: verdict.reason }, 'busy: not taking new jobs for now'),
  });
  logger.info(
    {
      workerId: rt.workerId,
      concurrency: env.WORKER_CONCURRENCY,
      maxEventLoopDelayMs: env.WORKER_MAX_EVENT_LOOP_DELAY_MS,
      maxHeapPercent: env.WORKER_MAX_HEAP_PERCENT,
      maxRunsPerRequester: env.WORKER_MAX_RUNS_PER_REQUESTER,
      tools: [...rt.tools.keys()],
      mcp: rt.mcp.report(),
      metricsPort: probes === undefined ? 0 : env.METRICS_PORT,
    },
    'worker started',
  );

  const stop = async (reason: string) => {
    if (stopping) return;
    logger.info({ reason }, 'stopping: no new jobs, finishing current steps');
    stopping = true;
    gate?.stop();
    const result = await closeWorker(worker, SHUTDOWN_GRACE_MS);
    if (result === 'timed_out') {
      const jobs = await inFlight.handBack();
      logger.warn(
        { graceMs: SHUTDOWN_GRACE_MS, jobs },
        'current steps did not finish in time; their jobs are handed back to the queue',
      );
    }
    probes?.close();
    await noMetrics?.stop();
    await rt.mcp.close();
    await rt.cancels?.close();
    await queue.close().catch(() => {});
    for (const c of [storeConnection, producer, workerConnection]) c.disconnect();
    // The spans still buffered are sent before the process exits (a shared tracer is the bot's to end).
    if (!options.telemetry)
      await telemetry?.shutdown().catch((err: unknown) => logger.warn({ err }, 'traces not flushed'));
    logger.info({}, 'worker stopped');
  };
  if (options.handleSignals !== false) {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      // `on`, not `once`: a second signal while stopping must not fall back to the default (kill).
      process.on(signal, () => {
        setTimeout(() => {
          logger.error({ limitMs: SHUTDOWN_LIMIT_MS }, 'shutdown took too long; exiting');
          process.exit(1);
        }, SHUTDOWN_LIMIT_MS).unref();
        stop(signal).then(
          () => process.exit(0),
          (err: unknown) => {
            logger.error({ err }, 'shutdown failed');
            process.exit(1);
          },
        );
      });
    }
  }
  return { worker, rt, stop };
}
