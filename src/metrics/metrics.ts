import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { EngineEvent } from '../loop/engine-events.js';

/**
 * loopgate's Prometheus metrics. Each process (bot, worker, or both in one) owns one registry and
 * serves it on /metrics; Prometheus sums the workers' series.
 */
export interface Metrics {
  registry: Registry;
  runsFinished: Counter<'status' | 'stop_reason'>;
  steps: Counter;
  toolCalls: Counter<'tool' | 'effect' | 'outcome'>;
  toolRetries: Counter<'tool' | 'code'>;
  approvalsRequested: Counter<'tool'>;
  subagentCalls: Counter<'agent' | 'outcome'>;
  approvalsDecided: Counter<'decision'>;
  approvalsPending: Gauge;
  /** Age of the oldest approval still waiting (0: none waits). */
  approvalsOldestPending: Gauge;
  /** Approved calls by how their execution ended (and gated calls that never ran, by why). */
  executions: Counter<'outcome'>;
  /** 1 while Redis answers a PING within a second at scrape time, 0 otherwise. */
  redisUp: Gauge;
  timeToDecision: Histogram<'decision'>;
  modelLatency: Histogram;
  modelReplies: Counter<'model'>;
  modelTokens: Counter<'kind'>;
  modelCostUsd: Counter;
  compactions: Counter;
  queueJobs: Gauge<'state'>;
  jobLatency: Histogram<'job'>;
  jobsProcessed: Counter<'job' | 'outcome'>;
  /** p99 event-loop delay of the last load sample of a worker (its backpressure signal). */
  eventLoopDelay: Gauge;
  /** 1 while a worker takes new jobs, 0 while its load gate holds them back. */
  takingJobs: Gauge;
  /** Clicks on an answer's feedback buttons that were recorded (the first per person and run). */
  feedback: Counter<'value'>;
  /** Agent session stop buttons that cancelled a run. */
  stopClicks: Counter;
  /** Slack calls let through by the shared rate budget, by method. */
  slackCalls: Counter<'method'>;
  /** Time Slack calls waited for their slot, by method. */
  slackWait: Histogram<'method'>;
  /** 429 answers from Slack, by method. */
  slackRateLimited: Counter<'method'>;
  /** Decorations not sent: replaced by a later one (coalesced) or dropped, by method. */
  slackDecorationsDropped: Counter<'method' | 'how'>;
}

interface MetricsSources {
  /** Pending approvals right now (read at scrape time). */
  pendingApprovals?: () => Promise<number>;
  /** Job counts of the runs queue by state (read at scrape time). */
  queueCounts?: () => Promise<Record<string, number>>;
  /** Seconds the oldest pending approval has waited (read at scrape time). */
  oldestPendingApprovalSeconds?: () => Promise<number>;
  /** Whether Redis answers (read at scrape time). */
  redisUp?: () => Promise<boolean>;
}

/** How a gated call's turn ended for it (ActionRecord outcomes): every series exists from the start. */
const EXECUTION_OUTCOMES = [
  'succeeded',
  'failed',
  'outcome_unknown',
  'rejected',
  'expired',
  'cancelled',
  'not_executed',
] as const;

const REDIS_UP_TIMEOUT_MS = 1_000;

/** A gauge's scrape-time read from Redis, or its current value when Redis does not answer in time. */
async function fromRedis(read: () => Promise<number>, gauge: Gauge): Promise<number> {
  const current = async () => (await gauge.get()).values[0]?.value ?? 0;
  return within(read, REDIS_UP_TIMEOUT_MS).catch(current);
}

/** A scrape-time read that gives up after the timeout (Redis gone must not hang /metrics). */
function within<T>(read: () => Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([read(), limit]).finally(() => clearTimeout(timer));
}

/** The registries a metric registers with: the process's one. */
type Registers = Registry[];

/**
 * The process's metrics, one family of them per function. The families are made in this order, which is
 * the order /metrics lists them in.
 */
export function createMetrics(
  sources: MetricsSources = {},
  options: { defaultMetrics?: boolean } = {},
): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false)
    collectDefaultMetrics({ register: registry, prefix: 'loopgate_process_' });
  const registers = [registry];
  return {
    registry,
    ...runMetrics(registers),
    ...approvalMetrics(registers, sources),
    ...modelMetrics(registers),
    ...queueMetrics(registers, sources),
    ...slackMetrics(registers),
    ...workerMetrics(registers),
  };
}

/** What the engine counts of runs: their ends, steps, tool calls, gated calls and sub-agent calls. */
function runMetrics(
  registers: Registers,
): Pick<
  Metrics,
  'runsFinished' | 'steps' | 'toolCalls' | 'toolRetries' | 'approvalsRequested' | 'subagentCalls'
> {
  return {
    runsFinished: new Counter({
      name: 'loopgate_runs_finished_total',
      help: 'Runs that ended, by status and stop reason',
      labelNames: ['status', 'stop_reason'] as const,
      registers,
    }),
    steps: new Counter({ name: 'loopgate_steps_total', help: 'Model calls made by runs', registers }),
    toolCalls: new Counter({
      name: 'loopgate_tool_calls_total',
      help: 'Tool calls by tool, effect and outcome (ok or the error code)',
      labelNames: ['tool', 'effect', 'outcome'] as const,
      registers,
    }),
    toolRetries: new Counter({
      name: 'loopgate_tool_retries_total',
      help: 'Tool attempts that failed transiently and were tried again, by tool and error code',
      labelNames: ['tool', 'code'] as const,
      registers,
    }),
    approvalsRequested: new Counter({
      name: 'loopgate_approvals_requested_total',
      help: 'Gated calls that asked for a decision',
      labelNames: ['tool'] as const,
      registers,
    }),
    subagentCalls: new Counter({
      name: 'loopgate_subagent_calls_total',
      help: 'Sub-agent calls answered by their child run, by agent and how the child ended',
      labelNames: ['agent', 'outcome'] as const,
      registers,
    }),
  };
}

/**
 * Approvals: decisions, what waits (read from Redis at scrape time), how gated calls ended, and
 * loopgate_redis_up, which says why those Redis reads may show their last value.
 */
function approvalMetrics(
  registers: Registers,
  sources: MetricsSources,
): Pick<
  Metrics,
  | 'approvalsDecided'
  | 'approvalsPending'
  | 'approvalsOldestPending'
  | 'executions'
  | 'redisUp'
  | 'timeToDecision'
> {
  return {
    approvalsDecided: new Counter({
      name: 'loopgate_approvals_decided_total',
      help: 'Approvals decided, by decision (approved, rejected, expired, cancelled)',
      labelNames: ['decision'] as const,
      registers,
    }),
    ...pendingApprovalMetrics(registers, sources),
    executions: executionsMetric(registers),
    redisUp: new Gauge({
      name: 'loopgate_redis_up',
      help: 'Whether Redis answered a PING within a second at scrape time (1) or not (0)',
      registers,
      async collect() {
        if (!sources.redisUp) return;
        const up = await within(sources.redisUp, REDIS_UP_TIMEOUT_MS).catch(() => false);
        this.set(up ? 1 : 0);
      },
    }),
    timeToDecision: new Histogram({
      name: 'loopgate_approval_decision_seconds',
      help: 'Time from an approval card to its decision',
      labelNames: ['decision'] as const,
      buckets: [5, 15, 30, 60, 300, 900, 1800, 3600, 14400, 86400],
      registers,
    }),
  };
}

/** The approvals waiting now and the age of the oldest, read from Redis at scrape time. */
function pendingApprovalMetrics(
  registers: Registers,
  sources: MetricsSources,
): Pick<Metrics, 'approvalsPending' | 'approvalsOldestPending'> {
  return {
    approvalsPending: new Gauge({
      name: 'loopgate_approvals_pending',
      help: 'Approvals waiting for a decision',
      registers,
      async collect() {
        // Redis gone: the last value stays and /metrics still answers (loopgate_redis_up says why).
        if (sources.pendingApprovals) this.set(await fromRedis(sources.pendingApprovals, this));
      },
    }),
    approvalsOldestPending: new Gauge({
      name: 'loopgate_approvals_oldest_pending_seconds',
      help: 'How long the oldest approval still waiting for a decision has waited (0: none waits)',
      registers,
      async collect() {
        if (sources.oldestPendingApprovalSeconds)
          this.set(await fromRedis(sources.oldestPendingApprovalSeconds, this));
      },
    }),
  };
}

/** Gated calls by how their turn ended, every outcome's series there from the start. */
function executionsMetric(registers: Registers): Metrics['executions'] {
  const counter = new Counter({
    name: 'loopgate_executions_total',
    help: 'Gated calls by how their turn ended: succeeded, failed, outcome_unknown (started, result lost), rejected, expired, cancelled, not_executed',
    labelNames: ['outcome'] as const,
    registers,
  });
  for (const outcome of EXECUTION_OUTCOMES) counter.inc({ outcome }, 0);
  return counter;
}

/** Model calls: latency, who answered, tokens, cost, and the compactions that call the model too. */
function modelMetrics(
  registers: Registers,
): Pick<Metrics, 'modelLatency' | 'modelReplies' | 'modelTokens' | 'modelCostUsd' | 'compactions'> {
  return {
    modelLatency: new Histogram({
      name: 'loopgate_model_latency_seconds',
      help: 'Duration of model calls (retries included)',
      buckets: [0.25, 0.5, 1, 2, 4, 8, 16, 32, 64],
      registers,
    }),
    modelReplies: new Counter({
      name: 'loopgate_model_replies_total',
      help: 'Model replies by the model that answered (a fallback shows under its own name)',
      labelNames: ['model'] as const,
      registers,
    }),
    modelTokens: new Counter({
      name: 'loopgate_model_tokens_total',
      help: 'Tokens used by model calls, by kind: input, output, and cached_input (the part of input the server read from its prompt cache)',
      labelNames: ['kind'] as const,
      registers,
    }),
    modelCostUsd: new Counter({
      name: 'loopgate_model_cost_usd_total',
      help: 'Model cost in US dollars',
      registers,
    }),
    compactions: new Counter({
      name: 'loopgate_context_compactions_total',
      help: 'Compactions of run histories to fit the context window (their model calls count as model tokens and cost)',
      registers,
    }),
  };
}

/** The runs queue: its jobs by state (read at scrape time) and how long a job waited for a worker. */
function queueMetrics(
  registers: Registers,
  sources: MetricsSources,
): Pick<Metrics, 'queueJobs' | 'jobLatency'> {
  return {
    queueJobs: new Gauge({
      name: 'loopgate_queue_jobs',
      help: 'Jobs of the runs queue by state',
      labelNames: ['state'] as const,
      registers,
      async collect() {
        if (!sources.queueCounts) return;
        const counts = await within(sources.queueCounts, REDIS_UP_TIMEOUT_MS).catch(() => ({}));
        for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
      },
    }),
    jobLatency: new Histogram({
      name: 'loopgate_job_wait_seconds',
      help: 'Time a job waited in the queue before a worker took it',
      labelNames: ['job'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30],
      registers,
    }),
  };
}

/** Slack: the buttons people click on answers, and the calls of the shared rate budget. */
function slackMetrics(
  registers: Registers,
): Pick<
  Metrics,
  'feedback' | 'stopClicks' | 'slackCalls' | 'slackWait' | 'slackRateLimited' | 'slackDecorationsDropped'
> {
  return {
    feedback: new Counter({
      name: 'loopgate_feedback_total',
      help: 'Feedback on answers recorded (the first click per person and run), by value (good, bad)',
      labelNames: ['value'] as const,
      registers,
    }),
    stopClicks: new Counter({
      name: 'loopgate_stop_clicks_total',
      help: 'Agent session stop buttons that cancelled a run',
      registers,
    }),
    ...slackBudgetCounters(registers),
  };
}

/** What the shared Slack rate budget let through, made wait, saw refused (429) and left unsent. */
function slackBudgetCounters(
  registers: Registers,
): Pick<Metrics, 'slackCalls' | 'slackWait' | 'slackRateLimited' | 'slackDecorationsDropped'> {
  return {
    slackCalls: new Counter({
      name: 'loopgate_slack_calls_total',
      help: 'Slack Web API calls let through by the shared rate budget, by method',
      labelNames: ['method'] as const,
      registers,
    }),
    slackWait: new Histogram({
      name: 'loopgate_slack_wait_seconds',
      help: 'Time a Slack call waited for its slot of the shared rate budget, by method',
      labelNames: ['method'] as const,
      buckets: [0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120],
      registers,
    }),
    slackRateLimited: new Counter({
      name: 'loopgate_slack_rate_limited_total',
      help: 'Slack Web API calls answered 429, by method',
      labelNames: ['method'] as const,
      registers,
    }),
    slackDecorationsDropped: new Counter({
      name: 'loopgate_slack_decorations_dropped_total',
      help: 'Decorative Slack calls not sent: coalesced (a later one replaced it) or dropped, by method',
      labelNames: ['method', 'how'] as const,
      registers,
    }),
  };
}

/** Workers: the jobs they processed and their load gate (event-loop delay, whether they take jobs). */
function workerMetrics(
  registers: Registers,
): Pick<Metrics, 'jobsProcessed' | 'eventLoopDelay' | 'takingJobs'> {
  return {
    jobsProcessed: new Counter({
      name: 'loopgate_jobs_processed_total',
      help: 'Jobs processed by workers, by job name and outcome',
      labelNames: ['job', 'outcome'] as const,
      registers,
    }),
    eventLoopDelay: new Gauge({
      name: 'loopgate_worker_event_loop_delay_seconds',
      help: "p99 event-loop delay of the worker's last load sample",
      registers,
    }),
    takingJobs: new Gauge({
      name: 'loopgate_worker_taking_jobs',
      help: '1 while the worker takes new jobs, 0 while its load gate holds them back',
      registers,
    }),
  };
}

/** Counts what the engine reports. */
export function recordEngineEvent(metrics: Metrics, event: EngineEvent): void {
  switch (event.type) {
    case 'step_started':
      metrics.steps.inc();
      return;
    case 'model_replied':
      metrics.modelLatency.observe(event.durationMs / 1000);
      if (event.model) metrics.modelReplies.inc({ model: event.model });
      metrics.modelTokens.inc({ kind: 'input' }, event.usage.inputTokens);
      metrics.modelTokens.inc({ kind: 'output' }, event.usage.outputTokens);
      // A part of `input`, not more of it: the share the server's prompt cache served.
      metrics.modelTokens.inc({ kind: 'cached_input' }, event.usage.cachedInputTokens ?? 0);
      metrics.modelCostUsd.inc(event.costUsd);
      return;
    case 'context_compacted':
      metrics.compactions.inc();
      if (event.model) metrics.modelReplies.inc({ model: event.model }, event.calls);
      metrics.modelTokens.inc({ kind: 'input' }, event.usage.inputTokens);
      metrics.modelTokens.inc({ kind: 'output' }, event.usage.outputTokens);
      metrics.modelCostUsd.inc(event.costUsd);
      return;
    case 'tool_finished':
      metrics.toolCalls.inc({
        tool: event.tool,
        effect: event.effect,
        outcome: event.ok ? 'ok' : (event.code ?? 'error'),
      });
      return;
    case 'tool_retried':
      metrics.toolRetries.inc({ tool: event.tool, code: event.code });
      return;
    case 'approval_needed':
      for (const call of event.calls) metrics.approvalsRequested.inc({ tool: call.tool });
      return;
    case 'finished':
      metrics.runsFinished.inc({ status: event.status, stop_reason: event.stopReason });
      return;
    case 'subagent_finished':
      metrics.subagentCalls.inc({ agent: event.agent, outcome: event.outcome });
      return;
    default:
      return;
  }
}

/** What the Slack rate budget counts (the shape src/slack/rate expects, kept here so metrics stays below slack). */
interface SlackBudgetCounters {
  call(method: string): void;
  waited(method: string, ms: number): void;
  rateLimited(method: string): void;
  dropped(method: string, how: 'coalesced' | 'dropped'): void;
}

/** The rate budget's counts (src/slack/rate), read from a process's metrics once it has them. */
export function slackBudgetMetrics(current: () => Metrics | undefined): SlackBudgetCounters {
  return {
    call: (method) => current()?.slackCalls.inc({ method }),
    waited: (method, ms) => current()?.slackWait.observe({ method }, ms / 1000),
    rateLimited: (method) => current()?.slackRateLimited.inc({ method }),
    dropped: (method, how) => current()?.slackDecorationsDropped.inc({ method, how }),
  };
}
