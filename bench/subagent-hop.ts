/**
 * What a sub-agent call costs beyond the child's own work (issue 11: at most about one job hop, ~1 ms).
 * A real BullMQ worker in this process (concurrency 8) on the local Redis, an instant in-process model,
 * Slack left out (a quiet notifier). Three kinds of runs, each started by a `start` job and timed from
 * the job's add to the final answer:
 * - direct: the child's work done by a person's run: a model call asking a no-op read, the read, a model
 *   call answering;
 * - parent only: the parent's own work without a sub-agent: a model call asking a no-op read, the read,
 *   a model call answering;
 * - delegated: the parent asks `ask_worker`, whose child run does the direct work, then the parent answers.
 * The sub-agent's cost is delegated - direct - parent only: the child's run and the parent's run each
 * already pay for their own start hop, so what remains is the extra hop back (the child's end reaching
 * its parent), creating the child, and applying its end. Also printed: the gaps in the model's request
 * log, hand-over (the parent's reply asking the sub-agent -> the child's first request) and return (the
 * child's answer -> the parent's next request), beside the gap between two steps of one run.
 * Interleaved, 5 warm-up runs of each, then the medians of 40 runs each.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { askTool } from '../src/agents/ask-tool.js';
import type { AgentDefinition } from '../src/agents/catalog.js';
import { defineTool } from '../src/loop/define-tool.js';
import type { ModelPort, ModelReply } from '../src/loop/model-port.js';
import type { RunLimits } from '../src/loop/run-limits.js';
import { DEFAULT_LIMITS } from '../src/loop/state.js';
import type { AnyTool, Logger } from '../src/loop/tool-contract.js';
import { createMetrics } from '../src/metrics/metrics.js';
import { createRedisConnection } from '../src/queue/connection.js';
import { addRunJob, createRunsQueue } from '../src/queue/runs-queue.js';
import type { Notifier } from '../src/slack/notifier-port.js';
import { createStore, runIdForEvent } from '../src/store/index.js';
import { closeWorker, createRunWorker } from '../src/worker/run-worker.js';
import type { WorkerRuntime } from '../src/worker/runtime.js';
import { deleteKeys } from '../test/store/redis-fixture.js';

const RUNS = 40;
const WARMUP = 5;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const logger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => logger };
const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

type Kind = 'direct' | 'parent' | 'delegated';

/** Per question: when each model request arrived and when its reply was returned. */
const log = new Map<string, { arrived: number[]; replied: number[] }>();
/** When each question's start job was added. */
const added = new Map<string, number>();
const ended = new Map<string, (at: number) => void>();

/** The last user message (a run's question, or a sub-agent's task) and how many tool results follow it. */
function turnOf(messages: Parameters<ModelPort['complete']>[0]['messages']) {
  let question = '';
  let results = 0;
  for (const m of messages) {
    if (m.role === 'user') {
      question = m.content;
      results = 0;
    } else if (m.role === 'tool') results++;
  }
  return { question, results };
}

const usage = { inputTokens: 10, outputTokens: 5 };
const call = (name: string, args: unknown): ModelReply => ({
  content: null,
  toolCalls: [{ id: 'c', name, arguments: JSON.stringify(args) }],
  usage,
  model: 'bench',
});
const answer = (text: string): ModelReply => ({ content: text, toolCalls: [], usage, model: 'bench' });

/** An instant model: `direct-*`, `parent-*` and `child-*` read once then answer; `delegated-*` asks the worker. */
const model: ModelPort = {
  model: 'bench',
  async complete(req) {
    const { question, results } = turnOf(req.messages);
    const entry = log.get(question) ?? { arrived: [], replied: [] };
    log.set(question, entry);
    entry.arrived.push(performance.now());
    let reply: ModelReply;
    if (question.startsWith('delegated-')) {
      reply =
        results === 0 ? call('ask_worker', { task: `child-${question}` }) : answer('the worker is done');
    } else {
      reply = results === 0 ? call('noop', {}) : answer('done');
    }
    entry.replied.push(performance.now());
    return reply;
  },
};

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
  async finalAnswer(ctx) {
    ended.get(ctx.runId)?.(performance.now());
    return '1700000000.000002';
  },
  async note() {
    return true;
  },
  async error() {},
  async reaction() {},
};

const prefix = `lgbench${randomBytes(4).toString('hex')}`;
const redis = createRedisConnection(REDIS_URL, 'store');
const producer = createRedisConnection(REDIS_URL, 'producer');
const workerConnection = createRedisConnection(REDIS_URL, 'worker');
const store = createStore(redis, { prefix: `{${prefix}}` });
const queue = createRunsQueue(producer, `{${prefix}}`);
const limits: RunLimits = { ...DEFAULT_LIMITS, maxTokens: 1e9, maxCostUsd: 1e9 };
const noop = defineTool({
  name: 'noop',
  description: 'does nothing',
  effect: 'read',
  parameters: z.object({}),
  execute: async () => 'ok',
});
const worker: AgentDefinition = {
  name: 'worker',
  description: 'does the work',
  prompt: 'You are WORKER.',
  tools: ['noop'],
  budgets: {},
};
const tools = new Map<string, AnyTool>([
  [noop.name, noop],
  ['ask_worker', askTool(worker)],
]);
const rt: WorkerRuntime = {
  store,
  queue,
  notifier: quietNotifier,
  model,
  tools,
  agents: { definitions: new Map([[worker.name, worker]]), modelOf: () => model, watchMs: 600_000 },
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
  metrics: createMetrics({}, { defaultMetrics: false }),
};
const bullWorker = createRunWorker(rt, workerConnection, { prefix: `{${prefix}}`, concurrency: 8 });
void bullWorker.run();

let n = 0;
/** One run of `kind`, from its start job's add to its final answer (ms). */
async function timed(kind: Kind): Promise<number> {
  const i = n++;
  const question = `${kind}-${i}`;
  const eventId = `EvBench${i}`;
  const done = new Promise<number>((resolve) => ended.set(runIdForEvent(eventId), resolve));
  const ts = `1700000000.${String(i).padStart(6, '0')}`;
  const started = performance.now();
  added.set(question, started);
  await addRunJob(queue, {
    name: 'start',
    data: {
      v: 1,
      eventId,
      teamId: 'TBENCH',
      channelId: 'CBENCH',
      threadTs: ts,
      messageTs: ts,
      userId: `UBENCH${i}`,
      text: question,
      kind: 'mention',
      receivedAt: Date.now(),
    },
  });
  return (await done) - started;
}

/** Model-log gaps of a delegated run: hand-over, return; and a direct run's gap between its two steps. */
function gaps(i: number, kind: Kind): number[] {
  const own = log.get(`${kind}-${i}`);
  if (kind !== 'delegated') {
    return [own!.arrived[1]! - own!.replied[0]!, own!.arrived[0]! - added.get(`${kind}-${i}`)!];
  }
  const child = log.get(`child-${kind}-${i}`)!;
  return [child.arrived[0]! - own!.replied[0]!, own!.arrived[1]! - child.replied[1]!];
}

try {
  const kinds: Kind[] = ['direct', 'parent', 'delegated'];
  for (let w = 0; w < WARMUP; w++) for (const kind of kinds) await timed(kind);
  const times: Record<Kind, number[]> = { direct: [], parent: [], delegated: [] };
  const stepGaps: number[] = [];
  const startHops: number[] = [];
  const handOver: number[] = [];
  const back: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    for (const kind of kinds) {
      const at = n;
      times[kind].push(await timed(kind));
      const g = gaps(at, kind);
      if (kind === 'direct') {
        stepGaps.push(g[0]!);
        startHops.push(g[1]!);
      }
      if (kind === 'delegated') {
        handOver.push(g[0]!);
        back.push(g[1]!);
      }
    }
  }
  const m = (xs: number[]) => median(xs).toFixed(2);
  const extra = median(times.delegated) - median(times.direct) - median(times.parent);
  console.log(`sub-agent call cost, in-process worker on the local Redis, instant model, ${RUNS} runs each:`);
  console.log(`  direct (the child's work as a run of its own):  median ${m(times.direct)} ms end to end`);
  console.log(`  parent only (the parent's work, no sub-agent):  median ${m(times.parent)} ms end to end`);
  console.log(
    `  delegated (parent asks a sub-agent doing it):    median ${m(times.delegated)} ms end to end`,
  );
  console.log(`  sub-agent cost = delegated - direct - parent only: ${extra.toFixed(2)} ms`);
  console.log(
    `  model-log gaps: between two steps of a run ${m(stepGaps)} ms; hand-over to the child ${m(handOver)} ms;`,
  );
  console.log(`                  the child's answer to the parent's next request ${m(back)} ms`);
  console.log(`  one job hop (a start job's add -> its run's first model request): ${m(startHops)} ms`);
  const jobs = (await rt.metrics!.jobsProcessed.get()).values;
  const count = (job: string, outcome: string) =>
    jobs.find((v) => v.labels.job === job && v.labels.outcome === outcome)?.value ?? 0;
  console.log(
    `  child_end jobs: ${count('child_end', 'done')} done, ${count('child_end', 'busy')} put back because the parent's lease was held`,
  );
} finally {
  await closeWorker(bullWorker, 5_000);
  await queue.obliterate({ force: true }).catch(() => {});
  await queue.close();
  await deleteKeys(redis, `${prefix}:*`);
  await deleteKeys(redis, `{${prefix}}:*`);
  await Promise.all([redis.quit(), producer.quit(), workerConnection.quit()]);
}
