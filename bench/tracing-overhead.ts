/**
 * Tracing overhead (issue 28): CPU time of this process per engine step with OpenTelemetry tracing off and
 * on. Each run is a whole `advanceRun` as a worker job does it (lease, Redis checkpoints, trace entries),
 * 20 steps of a no-op read over HTTP to a minimal OpenAI-compatible server in this process, then an
 * answer. With tracing on, the official SDK exports every span over OTLP/HTTP (protobuf, the default;
 * OTEL_EXPORTER_OTLP_PROTOCOL=http/json for JSON) to a receiver in a child process that reads and
 * discards the body; each traced run's spans are flushed (exported) inside its measurement, so the
 * figure includes serialising and sending them. Off and on runs are interleaved after a warm-up; the
 * figure is the median CPU (user + system) per step over RUNS runs each. Goal: on <= 1.05 x off.
 *
 * Off is measured as a process without an endpoint runs: without the SDK's context manager. Its
 * AsyncLocalStorage turns on async hooks for every promise of the process (on Node 20; Node 24's async
 * context frames cost next to nothing) and they stay on once used, so off blocks run with it
 * unregistered and on blocks with it registered again, as tracing on does.
 */

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { z } from 'zod';
import { createBufferedFetch } from '../src/http/buffered-fetch.js';
import { defineTool } from '../src/loop/define-tool.js';
import { createOpenAIModel } from '../src/loop/openai-model.js';
import type { RunLimits } from '../src/loop/run-limits.js';
import { createRun, DEFAULT_LIMITS } from '../src/loop/state.js';
import type { Logger } from '../src/loop/tool-contract.js';
import { createRedisConnection } from '../src/queue/connection.js';
import { createRunsQueue } from '../src/queue/runs-queue.js';
import type { Notifier } from '../src/slack/notifier-port.js';
import { createStore } from '../src/store/index.js';
import { startTelemetry } from '../src/telemetry/sdk.js';
import { advanceRun } from '../src/worker/advance.js';
import type { WorkerRuntime } from '../src/worker/runtime.js';
import { deleteKeys } from '../test/store/redis-fixture.js';
import { startMinimalModel } from './_minimal-model.js';

const STEPS = 20;
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const logger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => logger };
const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const quietNotifier: Notifier = {
  async progress() {},
  async flush() {},
  placeholderOf: () => undefined,
  async approvalCard(ctx) {
    return { channel: ctx.channelId, ts: '1700000000.000001' };
  },
  async updateCard() {
    return true;
  },
  async budgetCard(ctx) {
    return { channel: ctx.channelId, ts: '1700000000.000003' };
  },
  async updateBudgetCard() {
    return true;
  },
  async finalAnswer() {
    return '1700000000.000002';
  },
  async note() {
    return true;
  },
  async error() {},
  async reaction() {},
};

/**
 * An OTLP/HTTP receiver in a child process (its CPU is not this process's): reads each request whole,
 * answers 200, and counts them; prints its port first, and the count when asked on stdin.
 */
const SINK_SOURCE = `
const http = require('node:http');
let requests = 0;
const server = http.createServer((req, res) => {
  req.on('data', () => {});
  req.on('end', () => { requests++; res.writeHead(200, { 'content-type': 'application/json' }).end('{}'); });
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
process.stdin.on('data', () => console.log(requests));
`;
async function startSink(): Promise<{ url: string; requests: () => Promise<number>; close(): void }> {
  const child = spawn(process.execPath, ['-e', SINK_SOURCE], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const next = () => new Promise<string>((resolve) => lines.once('line', resolve));
  const port = Number(await next());
  return {
    url: `http://127.0.0.1:${port}`,
    requests: async () => {
      child.stdin.write('\n');
      return Number(await next());
    },
    close: () => child.kill(),
  };
}

const fake = await startMinimalModel(STEPS);
const sink = await startSink();
// The SDK's exporter reads the endpoint from the process environment itself.
process.env.OTEL_EXPORTER_OTLP_ENDPOINT = sink.url;
const telemetry = await startTelemetry({
  service: 'loopgate-bench',
  env: process.env,
  logger,
  redact: (text) => text,
});
if (!telemetry) throw new Error('tracing did not start');
const prefix = `lgbench${randomBytes(4).toString('hex')}`;
const redis = createRedisConnection(REDIS_URL, 'store');
const producer = createRedisConnection(REDIS_URL, 'producer');
const store = createStore(redis, { prefix: `{${prefix}}` });
const queue = createRunsQueue(producer, `{${prefix}}`);
const limits: RunLimits = { ...DEFAULT_LIMITS, maxSteps: STEPS + 5, maxTokens: 1e9, maxCostUsd: 1e9 };

const noop = defineTool({
  name: 'noop',
  description: 'does nothing',
  effect: 'read',
  parameters: z.object({ n: z.number() }),
  execute: async () => 'ok',
});
const rt: WorkerRuntime = {
  store,
  queue,
  notifier: quietNotifier,
  model: createOpenAIModel({
    apiKey: 'sk-bench',
    baseURL: fake.url,
    model: 'bench',
    maxRetries: 0,
    fetch: createBufferedFetch(),
  }),
  tools: new Map([[noop.name, noop]]),
  policy: {
    limits,
    approversFor: () => ({ users: ['UMGR'], groups: [] }),
    approvalTtlMs: 3_600_000,
    systemPrompt: () => 'You are loopgate (bench).',
  },
  clock: { now: () => Date.now() },
  logger,
  workerId: 'bench',
  leaseTtlMs: 30_000,
  stopping: () => false,
  threadPermalink: async (channel, ts) =>
    `https://bench.slack.com/archives/${channel}/p${ts.replace('.', '')}`,
};

/** The SDK's context manager as tracing on has it (startTelemetry registered one), or none as off has. */
const contextManager = new AsyncLocalStorageContextManager();
function contextManagerFor(traced: boolean): void {
  if (traced) context.setGlobalContextManager(contextManager.enable());
  else context.disable();
}

let runs = 0;
/** One run; the traced ones export through the tracer given. */
async function oneRun(traced: boolean): Promise<void> {
  fake.reset();
  const n = runs++;
  const state = createRun({
    runId: `bench-${n}`,
    requester: { userId: 'UBENCH', teamId: 'TBENCH' },
    systemPrompt: 'You are loopgate (bench).',
    question: 'go',
    limits,
    now: Date.now(),
  });
  const ts = `1700000000.${String(n).padStart(6, '0')}`;
  await store.runs.createRun(state, {
    teamId: 'TBENCH',
    channelId: 'CBENCH',
    threadTs: ts,
    requestMessageTs: ts,
  });
  if (traced) rt.telemetry = telemetry ?? undefined;
  else delete rt.telemetry;
  await advanceRun(rt, state.runId, `bench-job-${n}`, undefined, { name: 'start' });
  const loaded = await store.runs.loadRun(state.runId);
  if (loaded?.state.stopReason !== 'completed') throw new Error(`run ended ${loaded?.state.stopReason}`);
}

/**
 * CPU microseconds per step of a block of `size` runs. A traced block ends by flushing its spans, so
 * their export (serialising, sending) is inside the measurement: `size` 1 exports after every run, a
 * larger block exports in batches as the batch span processor would under load.
 */
async function block(traced: boolean, size: number): Promise<number> {
  contextManagerFor(traced);
  const before = process.cpuUsage();
  for (let i = 0; i < size; i++) await oneRun(traced);
  if (traced) await telemetry?.flush();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / (size * (STEPS + 1));
}

try {
  for (let i = 0; i < 3; i++) {
    await block(false, 1);
    await block(true, 1);
  }
  const fmt = (xs: number[]) => xs.map((x) => (x / 1000).toFixed(3)).join(', ');
  console.log(
    `tracing overhead, CPU per step, ${STEPS}-step runs of a no-op read (Node ${process.versions.node}, OTLP ${process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || process.env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf'}):`,
  );
  for (const size of [1, 5]) {
    const off: number[] = [];
    const on: number[] = [];
    for (let i = 0; i < Math.max(5, Math.round(RUNS / size)); i++) {
      // Alternating which goes first, so neither always follows the other's leftovers (GC debt, buffers).
      if (i % 2 === 0) {
        off.push(await block(false, size));
        on.push(await block(true, size));
      } else {
        on.push(await block(true, size));
        off.push(await block(false, size));
      }
    }
    const ratio = median(on) / median(off);
    console.log(`  spans exported every ${size} run(s), ${off.length} blocks each:`);
    console.log(
      `    tracing off: median ${(median(off) / 1000).toFixed(3)} ms CPU/step  (blocks: ${fmt(off)})`,
    );
    console.log(
      `    tracing on:  median ${(median(on) / 1000).toFixed(3)} ms CPU/step  (blocks: ${fmt(on)})`,
    );
    // The least CPU a block took is the figure least disturbed by other work on a shared machine.
    const least = Math.min(...on) / Math.min(...off);
    console.log(
      `    on/off: median ${((ratio - 1) * 100).toFixed(1)} %, least ${((least - 1) * 100).toFixed(1)} % more CPU per step (goal <= 5 %)`,
    );
  }
  // The tracing work alone, without the run around it: the spans of a 20-step run from its engine
  // events, then their export. Less noisy than the difference of two whole runs.
  contextManagerFor(true);
  const tracingAlone = async () => {
    const segment = telemetry.segment(undefined, {
      runId: 'alone',
      jobId: 'alone',
      job: 'start',
      requestModel: 'bench',
    });
    for (let i = 0; i < STEPS; i++) {
      segment.sink({
        type: 'model_replied',
        runId: 'alone',
        step: i + 1,
        toolCalls: 1,
        durationMs: 3,
        usage: { inputTokens: 10, outputTokens: 5 },
        costUsd: 0.00001,
        model: 'bench',
        finishReason: 'tool_calls',
      });
      segment.sink({
        type: 'tool_started',
        runId: 'alone',
        toolCallId: `c${i}`,
        tool: 'noop',
        effect: 'read',
        args: {},
      });
      segment.sink({
        type: 'tool_finished',
        runId: 'alone',
        toolCallId: `c${i}`,
        tool: 'noop',
        effect: 'read',
        ok: true,
        durationMs: 1,
      });
    }
    segment.end('done');
    await telemetry.flush();
  };
  for (let i = 0; i < 20; i++) await tracingAlone();
  const before = process.cpuUsage();
  for (let i = 0; i < 100; i++) await tracingAlone();
  const used = process.cpuUsage(before);
  console.log(
    `  the tracing work alone (spans of a ${STEPS}-step run, then their export): ${((used.user + used.system) / 100 / (STEPS + 1)).toFixed(0)} us CPU per step`,
  );
  console.log(`  OTLP export requests received: ${await sink.requests()}`);
} finally {
  await telemetry.shutdown();
  await queue.close();
  await deleteKeys(redis, `${prefix}:*`);
  await deleteKeys(redis, `{${prefix}}:*`);
  await Promise.all([redis.quit(), producer.quit()]);
  await fake.close();
  sink.close();
}
