/**
 * Durable runs through the worker's own code on the local Redis (issue 3). Prints, asserts nothing:
 * - per-step cost including persistence, for 1-, 10- and 50-step runs (total time / model calls, median
 *   over many runs): the engine alone, the engine with the store's checkpoint under a lease, and a whole
 *   `advanceRun` as a job does it (lease, load, trace, end delivery). Goal <= 0.3 ms, flat with history;
 * - pause of a 50-step run (the checkpoint the engine makes when it returns gated calls, plus
 *   createApprovals) and resume (loadRun, which reads the recorded decisions with the run). Goal <= 1 ms
 *   each;
 * - Redis bytes of a finished 50-step run (MEMORY USAGE over every key of the run) against the JSON bytes
 *   of its messages. Goal <= 1.3x;
 * - decision recorded -> approved tool starts executing, with an idle BullMQ worker in this process.
 *   Goal p99 <= 10 ms.
 * The model answers in-process with zero latency; the read tool does nothing.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { defineTool } from '../src/loop/define-tool.js';
import type { ModelPort, ModelReply } from '../src/loop/model-port.js';
import type { EngineDeps } from '../src/loop/ports.js';
import { runUntilPause } from '../src/loop/run.js';
import type { RunLimits } from '../src/loop/run-limits.js';
import type { RunState } from '../src/loop/run-state.js';
import { createRun, DEFAULT_LIMITS } from '../src/loop/state.js';
import type { AnyTool, Logger } from '../src/loop/tool-contract.js';
import { createRedisConnection } from '../src/queue/connection.js';
import { addRunJob, createRunsQueue, type RunsQueue } from '../src/queue/runs-queue.js';
import type { Notifier } from '../src/slack/notifier-port.js';
import {
  approvalIdFor,
  createStore,
  RunCheckpointer,
  runIdForEvent,
  type SlackContext,
  type Store,
} from '../src/store/index.js';
import { advanceRun } from '../src/worker/advance.js';
import { closeWorker, createRunWorker } from '../src/worker/run-worker.js';
import type { WorkerRuntime } from '../src/worker/runtime.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const STEP_COUNTS = [1, 10, 50] as const;
const PAUSE_SAMPLES = 400;
const LATENCY_SAMPLES = 200;

const logger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => logger };
const limits: RunLimits = {
  ...DEFAULT_LIMITS,
  maxSteps: 100,
  deadlineMs: 3_600_000,
  maxTokens: 1e9,
  maxCostUsd: 1e9,
};
const approvers = { users: ['UMGR'], groups: [] };

const noop = defineTool({
  name: 'noop',
  description: 'does nothing',
  effect: 'read',
  parameters: z.object({ n: z.number() }),
  execute: async () => 'ok',
});

/** A write tool whose execution only reports the moment it started. */
function restartTool(onExecute: () => void): AnyTool {
  return defineTool({
    name: 'restart',
    description: 'restarts nothing',
    effect: 'write',
    parameters: z.object({ n: z.number() }),
    async execute() {
      onExecute();
      return 'restarted';
    },
  });
}

const usage = { inputTokens: 1, outputTokens: 1 };
const callReply = (id: string, name: string, n: number): ModelReply => ({
  content: null,
  toolCalls: [{ id, name, arguments: `{"n":${n}}` }],
  usage,
  model: 'bench',
});
const answerReply: ModelReply = { content: 'done', toolCalls: [], usage, model: 'bench' };

/** Zero-latency model for one run: `steps` no-op reads (a different n each), then an answer or a write. */
function scriptedModel(steps: number, end: 'answer' | 'write'): ModelPort {
  let calls = 0;
  return {
    async complete() {
      calls++;
      if (calls <= steps) return callReply(`c${calls}`, 'noop', calls);
      return end === 'write' ? callReply(`w${calls}`, 'restart', calls) : answerReply;
    },
  };
}

/** Zero-latency model shared by every run of a worker: asks for a write, answers once it has a result. */
const writeThenAnswer: ModelPort = {
  async complete({ messages }) {
    return messages.at(-1)?.role === 'tool' ? answerReply : callReply('w1', 'restart', messages.length);
  },
};

/** Shows nothing; the approval card hook lets the latency benchmark learn the approval id. */
function quietNotifier(onCard: (approvalId: string) => void = () => {}): Notifier {
  return {
    async progress() {},
    async flush() {},
    placeholderOf: () => undefined,
    async approvalCard(ctx, view) {
      onCard(view.approvalId);
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
}

interface Bench {
  store: Store;
  queue: RunsQueue;
  prefix: string;
  connections: Redis[];
}

function runtime(b: Bench, model: ModelPort, tools: AnyTool[], notifier = quietNotifier()): WorkerRuntime {
  return {
    store: b.store,
    queue: b.queue,
    notifier,
    model,
    tools: new Map(tools.map((t) => [t.name, t])),
    policy: {
      limits,
      approversFor: () => approvers,
      approvalTtlMs: 3_600_000,
      systemPrompt: () => 'You are loopgate (bench).',
    },
    clock: { now: () => Date.now() },
    logger,
    workerId: 'bench',
    leaseTtlMs: 30_000,
    stopping: () => false,
  };
}

let runCounter = 0;
const slack = (n: number): SlackContext => ({
  teamId: 'TBENCH',
  channelId: 'CBENCH',
  threadTs: `1700000000.${String(n).padStart(6, '0')}`,
  requestMessageTs: `1700000000.${String(n).padStart(6, '0')}`,
});

function newState(): RunState {
  return createRun({
    runId: `bench-${runCounter++}`,
    requester: { userId: 'UBENCH', teamId: 'TBENCH' },
    systemPrompt: 'You are loopgate (bench).',
    question: 'go',
    limits,
    now: Date.now(),
  });
}

async function storedRun(store: Store): Promise<RunState> {
  const state = newState();
  await store.runs.createRun(state, slack(runCounter));
  return state;
}

/** Deletes one run's keys right away, so Redis stays small and every sample meets the same server. */
async function dropRun(store: Store, runId: string): Promise<void> {
  const keys = store.context.keys.run(runId);
  const approvalIds = await store.context.redis.smembers(keys.approvals);
  await store.context.redis.del(
    keys.header,
    keys.messages,
    keys.evidence,
    keys.trace,
    keys.lease,
    keys.approvals,
    ...approvalIds.flatMap((id) => [store.context.keys.approval(id), store.context.keys.ledger(id)]),
  );
}

async function leasedCheckpointer(store: Store, state: RunState) {
  const lease = await store.leases.acquire(state.runId, 'bench', 60_000);
  if (!lease.acquired) throw new Error('lease busy');
  const persisted = { messages: state.messages.length, evidence: state.evidence.length };
  return {
    fence: lease.fence,
    checkpointer: new RunCheckpointer(store.runs, state.runId, lease.fence, persisted),
  };
}

function engineDeps(model: ModelPort, extra: Partial<EngineDeps> = {}): EngineDeps {
  return {
    model,
    tools: new Map([[noop.name, noop]]),
    clock: { now: () => Date.now() },
    emit: () => {},
    logger,
    ...extra,
  };
}

function expectStop(state: RunState, reason: string): void {
  if (state.stopReason !== reason) throw new Error(`bench run ended with ${state.stopReason}, not ${reason}`);
}

type Variant = 'engine' | 'checkpoint' | 'advance';

/** Milliseconds per model call of one run of `steps` reads and an answer. */
async function perStepSample(b: Bench, variant: Variant, steps: number): Promise<number> {
  const model = scriptedModel(steps, 'answer');
  if (variant === 'engine') {
    const state = newState();
    const t0 = performance.now();
    const out = await runUntilPause(state, engineDeps(model));
    const ms = performance.now() - t0;
    expectStop(out.state, 'completed');
    return ms / (steps + 1);
  }
  const state = await storedRun(b.store);
  let ms: number;
  if (variant === 'checkpoint') {
    const { checkpointer, fence } = await leasedCheckpointer(b.store, state);
    const t0 = performance.now();
    const out = await runUntilPause(state, engineDeps(model, { checkpoint: checkpointer.checkpoint }));
    ms = performance.now() - t0;
    expectStop(out.state, 'completed');
    await b.store.leases.release(state.runId, fence);
  } else {
    const rt = runtime(b, model, [noop]);
    const t0 = performance.now();
    await advanceRun(rt, state.runId, 'bench-job');
    ms = performance.now() - t0;
    const loaded = await b.store.runs.loadRun(state.runId);
    if (!loaded) throw new Error('run vanished');
    expectStop(loaded.state, 'completed');
  }
  await dropRun(b.store, state.runId);
  return ms / (steps + 1);
}

async function perStep(b: Bench): Promise<void> {
  const labels: Record<Variant, string> = {
    engine: 'engine alone, no persistence',
    checkpoint: 'engine + checkpoint (RunCheckpointer under a lease)',
    advance: 'advanceRun (lease, load, engine + checkpoint, trace, end delivery)',
  };
  const results: Record<Variant, Record<number, number>> = { engine: {}, checkpoint: {}, advance: {} };
  for (const variant of ['engine', 'checkpoint', 'advance'] as const) {
    for (const steps of STEP_COUNTS) {
      const runs = Math.min(2000, Math.max(150, Math.ceil(6000 / (steps + 1))));
      for (let i = 0; i < Math.ceil(runs / 5); i++) await perStepSample(b, variant, steps); // warm-up
      const samples: number[] = [];
      for (let i = 0; i < runs; i++) samples.push(await perStepSample(b, variant, steps));
      results[variant][steps] = median(samples);
      console.log(
        `durable: ${String(steps).padStart(2)}-step runs, ${labels[variant]}: ${ms(median(samples))} per step (median of ${runs} runs)`,
      );
    }
    const r = results[variant];
    console.log(
      `durable: ${labels[variant]}: 50-step / 1-step per-step ratio ${(r[50]! / r[1]!).toFixed(2)}x (goal <= 0.3 ms per step, flat)`,
    );
  }
}

/** One 50-step run paused on a write: the pause's cost, then (after a decision) the resume's read cost. */
async function pauseResumeSample(b: Bench): Promise<{ pause: number; resume: number }> {
  const state = await storedRun(b.store);
  const { checkpointer, fence } = await leasedCheckpointer(b.store, state);
  let pauseCheckpointMs = Number.NaN;
  const checkpoint = async (s: RunState) => {
    const t0 = performance.now();
    await checkpointer.checkpoint(s);
    if (s.status === 'awaiting_approval') pauseCheckpointMs = performance.now() - t0;
  };
  const tools = new Map([noop, restartTool(() => {})].map((t) => [t.name, t]));
  const out = await runUntilPause(state, engineDeps(scriptedModel(50, 'write'), { tools, checkpoint }));
  if (out.type !== 'interruption') throw new Error(`expected a pause, got ${out.type}`);
  const now = Date.now();
  const t0 = performance.now();
  await b.store.approvals.createApprovals({
    runId: state.runId,
    fence,
    requester: state.requester.userId,
    now,
    approvals: out.gated.map((call) => ({ call, approvers, expiresAt: now + 3_600_000 })),
  });
  const pause = pauseCheckpointMs + (performance.now() - t0);
  await b.store.leases.release(state.runId, fence);
  for (const call of out.gated) {
    const approvalId = approvalIdFor(state.runId, call.toolCallId);
    await b.store.approvals.decide({ approvalId, decision: 'approved', decidedBy: 'UMGR', now: Date.now() });
  }

  // What a resume job reads before it applies the decisions: loadRun brings the run and the pending
  // calls' approval records in one snapshot.
  const t1 = performance.now();
  const loaded = await b.store.runs.loadRun(state.runId);
  const records = loaded?.pauseApprovals ?? [];
  const resume = performance.now() - t1;
  if (loaded?.state.step !== 51 || records.length !== 1 || records[0]?.status !== 'approved') {
    throw new Error('resume did not read the 50-step run and its decision');
  }
  await dropRun(b.store, state.runId);
  return { pause, resume };
}

async function pauseAndResume(b: Bench): Promise<void> {
  for (let i = 0; i < 40; i++) await pauseResumeSample(b); // warm-up
  const pauses: number[] = [];
  const resumes: number[] = [];
  for (let i = 0; i < PAUSE_SAMPLES; i++) {
    const s = await pauseResumeSample(b);
    pauses.push(s.pause);
    resumes.push(s.resume);
  }
  console.log(
    `durable: pause of a 50-step run (awaiting_approval checkpoint + createApprovals): ${ms(median(pauses))} median, ${ms(p99(pauses))} p99 (goal <= 1 ms)`,
  );
  console.log(
    `durable: resume of a 50-step run (loadRun + recorded decisions): ${ms(median(resumes))} median, ${ms(p99(resumes))} p99 (goal <= 1 ms)`,
  );
}

/** A read tool returning about 1 KB of JSON, like a small status or metrics reply. */
const kilobyteRead = defineTool({
  name: 'noop',
  description: 'returns about 1 KB',
  effect: 'read',
  parameters: z.object({ n: z.number() }),
  execute: async ({ n }) => ({
    n,
    series: Array.from({ length: 12 }, (_, i) => ({ instance: `10.0.${n % 250}.${i}:9100`, value: 0.5 + i })),
  }),
});

/** MEMORY USAGE of every key of a finished 50-step run against the JSON bytes of its messages. */
async function bytesPerRun(b: Bench, read: AnyTool, label: string): Promise<void> {
  const state = await storedRun(b.store);
  await advanceRun(runtime(b, scriptedModel(50, 'answer'), [read]), state.runId, 'bench-bytes');
  const loaded = await b.store.runs.loadRun(state.runId);
  if (!loaded) throw new Error('run vanished');
  expectStop(loaded.state, 'completed');
  const redis = b.store.context.redis;
  const base = b.store.context.keys.run(state.runId).base;
  const byKey: Record<string, number> = {};
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${base}*`, 'COUNT', 100);
    cursor = next;
    for (const key of keys) {
      byKey[key.slice(base.length)] = Number((await redis.memory('USAGE', key, 'SAMPLES', 0)) ?? 0);
    }
  } while (cursor !== '0');
  const total = Object.values(byKey).reduce((a, n) => a + n, 0);
  const messageBytes = Buffer.byteLength(JSON.stringify(loaded.state.messages));
  const parts = Object.entries(byKey)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  console.log(
    `durable: 50-step run, ${label}: ${total} bytes in Redis over its keys (${parts}) vs ${messageBytes} bytes of ` +
      `message JSON: ${(total / messageBytes).toFixed(2)}x (goal <= 1.3x); without the trace ` +
      `${((total - (byKey.trace ?? 0)) / messageBytes).toFixed(2)}x`,
  );
  await dropRun(b.store, state.runId);
}

/**
 * Decision recorded -> the approved tool's execute() starts, through a real idle BullMQ worker. With
 * `quorum` 2 (a policy rule asking two approvers), the first approval is counted beforehand and the clock
 * starts at the second, the one that completes the quorum in decideApproval's compare-and-set.
 */
async function decisionLatency(b: Bench, quorum = 1): Promise<void> {
  let onCard: (approvalId: string) => void = () => {};
  let onExecute: (at: number) => void = () => {};
  const base = runtime(
    b,
    writeThenAnswer,
    [restartTool(() => onExecute(performance.now()))],
    quietNotifier((id) => onCard(id)),
  );
  const rt: WorkerRuntime =
    quorum === 1
      ? base
      : {
          ...base,
          policy: {
            ...base.policy,
            gate: () => ({
              kind: 'ask',
              rule: { index: 0, label: 'rule 1 of restart (bench)' },
              approvers: { users: ['UMGR', 'ULEAD'], groups: [] },
              quorum,
              selfApproval: false,
              expiresAfterMs: 3_600_000,
              remindAtPercent: [],
              escalation: null,
              grant: null,
            }),
          },
        };
  const connection = createRedisConnection(REDIS_URL, 'worker');
  b.connections.push(connection);
  const worker = createRunWorker(rt, connection, { prefix: b.prefix });
  const finished = new Map<string, () => void>();
  worker.on('completed', (job) => finished.get(job.id ?? '')?.());
  const jobDone = (jobId: string) =>
    new Promise<void>((resolve) => {
      finished.set(jobId, () => {
        finished.delete(jobId);
        resolve();
      });
    });
  void worker.run();
  await worker.waitUntilReady();

  const sample = async (n: number) => {
    const eventId = `EvBench${quorum}x${n}`;
    const card = new Promise<string>((resolve) => {
      onCard = resolve;
    });
    const started = jobDone(`start-${eventId}`);
    const data = {
      v: 1 as const,
      eventId,
      teamId: 'TBENCH',
      channelId: 'CBENCH',
      threadTs: `170000000${quorum}.${String(n).padStart(6, '0')}`,
      messageTs: `170000000${quorum}.${String(n).padStart(6, '0')}`,
      userId: 'UBENCH',
      text: 'restart it',
      kind: 'mention' as const,
      receivedAt: Date.now(),
    };
    await addRunJob(b.queue, { name: 'start', data });
    const approvalId = await card;
    await started; // the worker is idle again: the run waits only in Redis
    const executed = new Promise<number>((resolve) => {
      onExecute = resolve;
    });
    const resumed = jobDone(`resume-${encodeURIComponent(approvalId)}`);
    if (quorum > 1) {
      const first = await b.store.approvals.decide({
        approvalId,
        decision: 'approved',
        decidedBy: 'ULEAD',
        now: Date.now(),
      });
      if (first.vote !== 'counted' || first.won) throw new Error('the first approval should only count');
    }
    const decided = await b.store.approvals.decide({
      approvalId,
      decision: 'approved',
      decidedBy: 'UMGR',
      now: Date.now(),
    });
    const t0 = performance.now();
    if (!decided.won) throw new Error('decision lost');
    await addRunJob(b.queue, { name: 'resume', data: { v: 1, runId: runIdForEvent(eventId), approvalId } });
    const enqueued = performance.now();
    const at = await executed;
    await resumed;
    return { fromDecision: at - t0, fromEnqueue: at - enqueued };
  };

  try {
    for (let i = 0; i < 20; i++) await sample(i); // warm-up
    const fromDecision: number[] = [];
    const fromEnqueue: number[] = [];
    for (let i = 0; i < LATENCY_SAMPLES; i++) {
      const s = await sample(1000 + i);
      fromDecision.push(s.fromDecision);
      fromEnqueue.push(s.fromEnqueue);
    }
    console.log(
      `durable: ${quorum > 1 ? `quorum ${quorum}: last ` : ''}decision recorded -> approved tool executing (idle worker, ${LATENCY_SAMPLES} samples): ` +
        `${ms(median(fromDecision))} p50, ${ms(p99(fromDecision))} p99 (goal p99 <= 10 ms); ` +
        `from the resume job enqueued: ${ms(median(fromEnqueue))} p50, ${ms(p99(fromEnqueue))} p99`,
    );
  } finally {
    await closeWorker(worker, 5_000);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)]!;
const ms = (x: number) => `${x.toFixed(3)} ms`;

async function deleteKeys(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
}

async function main() {
  const bare = `lgbench${randomBytes(4).toString('hex')}`;
  const prefix = `{${bare}}`;
  const storeConnection = createRedisConnection(REDIS_URL, 'store');
  const producer = createRedisConnection(REDIS_URL, 'producer');
  const b: Bench = {
    store: createStore(storeConnection, { prefix }),
    queue: createRunsQueue(producer, prefix),
    prefix,
    connections: [storeConnection, producer],
  };
  try {
    await perStep(b);
    await pauseAndResume(b);
    await bytesPerRun(b, noop, 'no-op read');
    await bytesPerRun(b, kilobyteRead, 'read returning 1 KB (for comparison)');
    await decisionLatency(b);
    await decisionLatency(b, 2);
  } finally {
    await b.queue.obliterate({ force: true }).catch(() => {});
    await b.queue.close();
    await deleteKeys(storeConnection, `${bare}:*`);
    await deleteKeys(storeConnection, `${prefix}:*`);
    await Promise.all(b.connections.map((c) => c.quit()));
  }
}

await main();
