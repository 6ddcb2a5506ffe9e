import type { Server } from 'node:http';
import { type Env, loadEnv } from '../config/env.js';
import { ConfigError } from '../config/errors.js';
import { loadPolicy, type Policy } from '../config/policy.js';
import { configuredSecrets } from '../config/policy-env.js';
import { type RedisTarget, redisTarget, targetVariable } from '../config/redis-target.js';
import { createLogger, type Logger, secretRedactor } from '../log/logger.js';
import { startProbeServer } from '../metrics/http.js';
import { createMetrics, type Metrics } from '../metrics/metrics.js';
import { type CalendarRefresher, startCalendarRefresher } from '../policy/calendar/refresher.js';
import { refuseClusterNode } from '../queue/cluster-node-check.js';
import { createRedisConnection, type RedisClient } from '../queue/connection.js';
import { isConnectionError, reportRedisOutages } from '../queue/outage-log.js';
import { createRunsQueue, type RunsQueue } from '../queue/runs-queue.js';
import type { Store } from '../store/store.js';
import { createStore } from '../store/store.js';
import type { RunTracer } from '../telemetry/run-tracer.js';
import { startTelemetry } from '../telemetry/sdk.js';
import { customToolSecrets } from '../tools/registry.js';
import { buildWorkerRuntime } from './build-runtime.js';
import { CancelWatch } from './cancel-watch.js';
import { type InFlightJobs, inFlightJobs } from './hand-back.js';
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

/**
 * Calendar freezes of a bot or worker, shared through the store's Redis: read before the first call is
 * judged (bounded), kept current after.
 */
export async function startCalendars(
  policy: Policy,
  store: Store,
  logger: Logger,
): Promise<CalendarRefresher> {
  const calendars = startCalendarRefresher({
    freezes: policy.freezes,
    redis: store.context.redis,
    keyPrefix: store.context.keys.prefix,
    env: process.env,
    logger,
  });
  await calendars.ready;
  return calendars;
}

interface StartWorkerOptions {
  /** Share the registry of another part of the process (`npm start`); else the worker makes its own. */
  metrics?: Metrics;
  /** Serve /metrics, /healthz and /readyz on METRICS_PORT. Default true. */
  serveProbes?: boolean;
  /** Stop on SIGTERM/SIGINT and exit the process. Default true. */
  handleSignals?: boolean;
  /** Share the bot's tracer (`npm start`); else the worker starts its own when OTEL_* asks for one. */
  telemetry?: RunTracer | null;
}

/** The worker's Redis connections: the store's, BullMQ's producer and worker, and the cancel subscriber. */
interface WorkerConnections {
  target: RedisTarget;
  store: RedisClient;
  producer: RedisClient;
  worker: RedisClient;
  /** Given over to subscribe mode: hears of cancelled runs at once (cancel-watch.ts). */
  subscriber: RedisClient;
}

/** What a stopping worker stops, closes and flushes. */
interface RunningWorker {
  logger: Logger;
  worker: ReturnType<typeof createRunWorker>;
  inFlight: InFlightJobs;
  gate: LoadGate;
  probes: ProbeServing;
  rt: Awaited<ReturnType<typeof buildWorkerRuntime>>;
  queue: RunsQueue;
  connections: WorkerConnections;
  calendars: CalendarRefresher;
  /** The tracer to flush on stop: none when it is shared (a shared tracer is the bot's to end). */
  ownTelemetry: RunTracer | null;
}

/** What the probes read (Redis, the worker, its MCP servers), and where a worker without them says so. */
type ProbeParts = Pick<RunningWorker, 'logger' | 'rt' | 'connections' | 'worker'> & {
  env: Env<'worker'>;
  store: Store;
  metrics: Metrics;
};

/** The probe server, or why there is none: the announcement of a worker without metrics. */
interface ProbeServing {
  server?: Server;
  noMetrics?: NoMetricsAnnouncement;
}

/**
 * Starts a worker in this process: it takes jobs until stopped, then stops taking jobs, lets the
 * current steps finish (each job hands its run back at the next step boundary, for another worker to
 * continue) and closes its connections.
 */
export async function startWorker(options: StartWorkerOptions = {}) {
  const { env, policy, secrets, logger } = await workerConfig();
  const connections = await connectRedis(env, logger);
  const { store, queue } = storeAndQueue(env, policy, connections, logger);
  const metrics = options.metrics ?? metricsFor(store, queue);
  const calendars = await startCalendars(policy, store, logger);
  let stopping = false;
  const telemetry =
    options.telemetry ??
    (await startTelemetry({ service: 'loopgate-worker', env: process.env, logger, redact: secrets.text }));
  const cancels = new CancelWatch({
    isCancelled: (runId) => store.runs.cancelRecorded(runId),
    subscriber: connections.subscriber,
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
  const worker = createRunWorker(rt, connections.worker, {
    inFlight,
    concurrency: env.WORKER_CONCURRENCY,
    lockDurationMs: env.WORKER_LOCK_MS,
    stalledIntervalMs: Math.max(500, Math.floor(env.WORKER_LOCK_MS / 2)),
    prefix: env.LOOPGATE_PREFIX,
  });
  let gate: LoadGate | undefined;
  const probes =
    options.serveProbes !== false && env.METRICS_PORT !== 0
      ? await serveProbes({ env, logger, store, metrics, rt, connections, worker }, () => gate?.admitting())
      : {};
  worker.run().catch((err: unknown) => logger.error({ err }, 'worker stopped with an error'));
  gate = startGate(env, worker, metrics, logger);
  logStarted(logger, env, rt, probes);
  const running = { logger, worker, inFlight, gate, probes, rt, queue, connections, calendars };
  const stop = async (reason: string) => {
    if (stopping) return;
    logger.info({ reason }, 'stopping: no new jobs, finishing current steps');
    stopping = true;
    await shutDown({ ...running, ownTelemetry: options.telemetry ? null : telemetry });
  };
  if (options.handleSignals !== false) exitOnSignals(logger, stop);
  return { worker, rt, stop };
}

/** The environment, the policy, every configured secret, and a logger that never shows one. */
async function workerConfig() {
  const env = loadEnv(process.env, { need: 'worker' });
  const policy = await loadPolicy(env.LOOPGATE_CONFIG);
  // Every configured secret, so logs and tool failures never show one whatever holds it.
  const secrets = secretRedactor([
    ...configuredSecrets(policy, process.env),
    ...(await customToolSecrets(policy, process.env)),
  ]);
  const logger = createLogger({ level: env.LOG_LEVEL, service: 'loopgate-worker', secrets });
  return { env, policy, secrets, logger };
}

/** The worker's connections, their outages reported; a REDIS_URL naming a Redis Cluster node is refused. */
async function connectRedis(env: Env<'worker'>, logger: Logger): Promise<WorkerConnections> {
  const target = redisTarget(env);
  const connections = {
    target,
    store: createRedisConnection(target, 'store'),
    producer: createRedisConnection(target, 'worker'),
    worker: createRedisConnection(target, 'worker'),
    subscriber: createRedisConnection(target, 'worker'),
  };
  const { store, producer, worker, subscriber } = connections;
  reportRedisOutages([store, producer, worker, subscriber], target, logger);
  await refuseClusterNode(store);
  return connections;
}

/** The store and the runs queue, on their own connections. */
function storeAndQueue(env: Env<'worker'>, policy: Policy, connections: WorkerConnections, logger: Logger) {
  const store = createStore(connections.store, {
    prefix: env.LOOPGATE_PREFIX,
    retentionMs: env.RETENTION_DAYS * 86_400_000,
    maxQueuedPerThread: policy.inbound.maxQueuedPerThread,
    waitReplicas: env.REDIS_WAIT_REPLICAS,
    waitTimeoutMs: env.REDIS_WAIT_TIMEOUT_MS,
  });
  const queue = createRunsQueue(connections.producer, env.LOOPGATE_PREFIX);
  // Without a listener BullMQ's queue would rethrow its connection's errors.
  queue.on('error', (err: Error) => {
    if (!isConnectionError(err)) logger.warn({ err }, 'runs queue error');
  });
  return { store, queue };
}

/**
 * /metrics, /healthz and /readyz on METRICS_PORT. A metrics port is not worth an outage: a port in use (a
 * second worker on one host, the new worker of a rolling restart while the old one drains) leaves this
 * worker without probes, saying so, and it takes jobs as usual.
 */
function serveProbes(
  w: ProbeParts,
  /** Whether the load gate lets jobs in (undefined until it starts). */
  admitting: () => boolean | undefined,
): Promise<ProbeServing> {
  const { env, logger, connections } = w;
  return startProbeServer({
    registry: w.metrics.registry,
    port: env.METRICS_PORT,
    portVariable: 'METRICS_PORT',
    readiness: {
      redis: async () => (await connections.store.ping()) === 'PONG',
      // Health is jobs flowing, not just PING: the worker's own blocking connection must be up.
      // A worker its load gate holds back is not taking jobs on purpose: its main loop may rest.
      worker: async () =>
        (w.worker.isRunning() || admitting() === false) && connections.worker.status === 'ready',
    },
    reasons: {
      redis: `redis: Redis does not answer (check ${targetVariable(connections.target)} and that Redis is up)`,
      worker: 'worker: not taking jobs: its queue connection is not ready (Redis unreachable) or it stopped',
    },
    // A missing MCP server does not make the worker unready (its other tools serve); it is listed.
    details: () => ({ mcp: w.rt.mcp.report() }),
  }).then(
    (server): ProbeServing => ({ server }),
    (err: unknown): ProbeServing => {
      if (!(err instanceof ConfigError)) throw err;
      logger.warn(
        { variable: 'METRICS_PORT', port: env.METRICS_PORT },
        `METRICS_PORT ${env.METRICS_PORT} is already in use on this host: this worker serves no /metrics, /healthz or /readyz, and takes jobs as usual; give each worker on one host its own METRICS_PORT (or 0 for none)`,
      );
      return { noMetrics: announceNoMetrics(w.store.workerNotices, env.METRICS_PORT, logger) };
    },
  );
}

/** The load gate: it stops the worker taking jobs while the process is overloaded, and says so. */
function startGate(
  env: Env<'worker'>,
  worker: RunningWorker['worker'],
  metrics: Metrics,
  logger: Logger,
): LoadGate {
  return startLoadGate({
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
}

/** Says the worker started, with what it runs with. */
function logStarted(logger: Logger, env: Env<'worker'>, rt: RunningWorker['rt'], probes: ProbeServing): void {
  logger.info(
    {
      workerId: rt.workerId,
      concurrency: env.WORKER_CONCURRENCY,
      maxEventLoopDelayMs: env.WORKER_MAX_EVENT_LOOP_DELAY_MS,
      maxHeapPercent: env.WORKER_MAX_HEAP_PERCENT,
      maxRunsPerRequester: env.WORKER_MAX_RUNS_PER_REQUESTER,
      tools: [...rt.tools.keys()],
      mcp: rt.mcp.report(),
      metricsPort: probes.server === undefined ? 0 : env.METRICS_PORT,
    },
    'worker started',
  );
}

/**
 * Stops taking jobs and waits SHUTDOWN_GRACE_MS for the current steps, handing back the jobs of those
 * that did not finish; then closes everything the worker opened.
 */
async function shutDown(w: RunningWorker): Promise<void> {
  const { logger } = w;
  w.gate.stop();
  const result = await closeWorker(w.worker, SHUTDOWN_GRACE_MS);
  if (result === 'timed_out') {
    const jobs = await w.inFlight.handBack();
    logger.warn(
      { graceMs: SHUTDOWN_GRACE_MS, jobs },
      'current steps did not finish in time; their jobs are handed back to the queue',
    );
  }
  w.probes.server?.close();
  w.calendars.stop();
  await w.probes.noMetrics?.stop();
  await w.rt.mcp.close();
  await w.rt.cancels?.close();
  await w.queue.close().catch(() => {});
  for (const c of [w.connections.store, w.connections.producer, w.connections.worker]) c.disconnect();
  // The spans still buffered are sent before the process exits.
  await w.ownTelemetry?.shutdown().catch((err: unknown) => logger.warn({ err }, 'traces not flushed'));
  logger.info({}, 'worker stopped');
}

/** SIGTERM and SIGINT stop the worker and exit, or exit anyway after SHUTDOWN_LIMIT_MS. */
function exitOnSignals(logger: Logger, stop: (reason: string) => Promise<void>): void {
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
