/**
 * Step overhead, black box (issue 15): the gap between the fake model's reply and the next model request
 * it receives, in a 20-step run of cheap reads (a no-op read tool each step, then an answer), over HTTP
 * through an OpenAI-compatible fake server on 127.0.0.1. Each gap is what the framework does between two
 * model calls: parse the reply, validate and run the tool, record the result, build the next request.
 *
 * - loopgate: a whole `advanceRun` as a worker job does it, with the OpenAI adapter over HTTP and the run
 *   store on the local Redis (lease, checkpoint of every step, trace), Slack left out (a quiet notifier).
 * - @openai/agents 0.20.0: `run(agent)` in memory (no persistence, tracing off), its Chat Completions model
 *   over HTTP to the same fake server.
 * The fake is a minimal server (not test/fakes/openai-server.ts, which validates every request).
 * Interleaved, one warm-up run each, then the median gap of each run and the median of 5 runs.
 * Goal: loopgate <= 0.5x the peer.
 */

import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Agent, OpenAIChatCompletionsModel, run, setTracingDisabled, tool } from '@openai/agents';
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
import { advanceRun } from '../src/worker/advance.js';
import type { WorkerRuntime } from '../src/worker/runtime.js';
import { deleteKeys } from '../test/store/redis-fixture.js';
import { startMinimalModel, type Timing } from './_minimal-model.js';

const STEPS = 20;
const RUNS = 5;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const logger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => logger };
const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Median gap, ms, from each reply to the next request of one run. */
function gapsOf(t: Timing): number {
  const gaps: number[] = [];
  for (let i = 1; i < t.arrived.length; i++) gaps.push(t.arrived[i]! - t.replied[i - 1]!);
  if (gaps.length !== STEPS) throw new Error(`expected ${STEPS} gaps, got ${gaps.length}`);
  return median(gaps);
}

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

const fake = await startMinimalModel(STEPS);
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
  // As the worker builds it (build-runtime.ts): the kept-alive buffered fetch.
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
};

let runs = 0;
async function loopgateRun(): Promise<number> {
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
  await advanceRun(rt, state.runId, `bench-job-${n}`);
  const loaded = await store.runs.loadRun(state.runId);
  if (loaded?.state.stopReason !== 'completed')
    throw new Error(`loopgate run ended ${loaded?.state.stopReason}`);
  return gapsOf(fake.timing);
}

setTracingDisabled(true);
// The peer with its own pinned openai SDK (a different version from loopgate's), as its users get it.
type PeerClient = ConstructorParameters<typeof OpenAIChatCompletionsModel>[0];
const peerRequire = createRequire(fileURLToPath(import.meta.resolve('@openai/agents-openai')));
const PeerOpenAI = (peerRequire('openai') as { OpenAI: new (o: object) => PeerClient }).OpenAI;
const agent = new Agent({
  name: 'bench',
  instructions: 'You are a bench.',
  model: new OpenAIChatCompletionsModel(
    new PeerOpenAI({ apiKey: 'sk-bench', baseURL: fake.url, maxRetries: 0 }),
    'bench',
  ),
  tools: [
    tool({
      name: 'noop',
      description: 'does nothing',
      parameters: z.object({ n: z.number() }),
      execute: async () => 'ok',
    }),
  ],
});
async function agentsRun(): Promise<number> {
  fake.reset();
  const result = await run(agent, 'go', { maxTurns: STEPS + 5 });
  if (result.finalOutput !== 'done') throw new Error(`agents run ended with ${String(result.finalOutput)}`);
  return gapsOf(fake.timing);
}

try {
  await loopgateRun();
  await agentsRun();
  const ours: number[] = [];
  const peer: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    ours.push(await loopgateRun());
    peer.push(await agentsRun());
  }
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(', ');
  console.log(`step overhead, reply -> next request over HTTP, ${STEPS}-step runs of a no-op read:`);
  console.log(
    `  loopgate (advanceRun, Redis checkpoints): median ${median(ours).toFixed(2)} ms  (runs: ${fmt(ours)})`,
  );
  console.log(
    `  @openai/agents 0.20.0 (in memory):        median ${median(peer).toFixed(2)} ms  (runs: ${fmt(peer)})`,
  );
  console.log(`  ratio: ${(median(ours) / median(peer)).toFixed(2)}x (goal <= 0.5x)`);
} finally {
  await queue.close();
  await deleteKeys(redis, `${prefix}:*`);
  await deleteKeys(redis, `{${prefix}}:*`);
  await Promise.all([redis.quit(), producer.quit()]);
  await fake.close();
}
