/**
 * Runs longer than the context window (issue 11, section 3), on the local Redis. Prints, asserts nothing:
 * - per-step persistence of a 200-step run that compacts its history many times (an 8,000-token window,
 *   a ~500-token tool result per step): the time spent in the store's checkpoints (RunCheckpointer under
 *   a lease, saveStep-7) per step, by where the step is in the run (steps 1-10, 41-50, 91-100,
 *   191-200), and the steps that compacted on their own. Goal: flat from 1 to 200 steps;
 * - the engine's own time per step (view, estimate, compaction bookkeeping; the model answers in-process
 *   at once) at the start and the end, with and without a context window;
 * - the size of what the model is sent at step 200, with and without compaction, and the JSON the
 *   header rewrites on every step.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { modelView } from '../src/loop/context.js';
import { defineTool } from '../src/loop/define-tool.js';
import { requestTokens } from '../src/loop/estimate.js';
import type { ModelPort, ModelRequest } from '../src/loop/model-port.js';
import type { EngineDeps } from '../src/loop/ports.js';
import type { RunLimits } from '../src/loop/run-limits.js';
import type { RunState } from '../src/loop/run-state.js';
import { createRun, DEFAULT_LIMITS } from '../src/loop/state.js';
import { step } from '../src/loop/step.js';
import type { Logger } from '../src/loop/tool-contract.js';
import { createRedisConnection } from '../src/queue/connection.js';
import { createStore, RunCheckpointer, type SlackContext, type Store } from '../src/store/index.js';
import { changingJson } from '../src/store/runs/header-codec.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const STEPS = 200;
const RUNS = 12;
const BUCKETS: Array<[number, number]> = [
  [1, 10],
  [41, 50],
  [91, 100],
  [191, 200],
];

const logger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => logger };
const withWindow: RunLimits = {
  ...DEFAULT_LIMITS,
  maxSteps: STEPS + 5,
  deadlineMs: 3_600_000,
  maxTokens: 1e9,
  maxCostUsd: 1e9,
  context: {
    windowTokens: 8_000,
    compactAtPercent: 70,
    summaryTokens: 400,
    maxStoredResultBytes: 1_000_000,
    maxStoredBytesPerRun: 4_000_000,
  },
};
const { context: _none, ...withoutWindow } = withWindow;

const report = defineTool({
  name: 'report',
  description: 'A status report of one row',
  effect: 'read',
  parameters: z.object({ row: z.number() }),
  async execute(args) {
    return Array.from(
      { length: 40 },
      (_, i) =>
        `row ${args.row}.${i}: service-${(args.row * 7 + i) % 97} latency ${(args.row * 13 + i * 7) % 300} ms`,
    ).join('\n');
  },
});

const isSummary = (req: ModelRequest) => req.tools.length === 0;

/** Zero-latency model: a report per step, summaries when asked, an answer after STEPS calls. */
function model(): ModelPort & { largest: number } {
  let calls = 0;
  const port = {
    largest: 0,
    async complete(req: ModelRequest) {
      const usage = { inputTokens: requestTokens(req.messages, req.tools), outputTokens: 20 };
      if (isSummary(req)) {
        return {
          content: `Summary: rows 1 to ${calls} checked, all ok.`,
          toolCalls: [],
          usage,
          model: 'bench',
        };
      }
      port.largest = Math.max(port.largest, usage.inputTokens);
      calls++;
      if (calls >= STEPS) return { content: 'All rows are ok.', toolCalls: [], usage, model: 'bench' };
      return {
        content: null,
        toolCalls: [{ id: `c${calls}`, name: 'report', arguments: `{"row":${calls}}` }],
        usage,
        model: 'bench',
      };
    },
  };
  return port;
}

let runCounter = 0;
const slack = (n: number): SlackContext => ({
  teamId: 'TBENCH',
  channelId: 'CBENCH',
  threadTs: `1700000000.${String(n).padStart(6, '0')}`,
  requestMessageTs: `1700000000.${String(n).padStart(6, '0')}`,
});

interface Sample {
  /** Checkpoint milliseconds per step (index = step number): the reply's and the results'. */
  persist: number[];
  /** Milliseconds of each checkpoint that stored a new compaction record (before its step's call). */
  compactionSaves: number[];
  /** Engine milliseconds per step, checkpoints excluded. */
  engine: number[];
  /** Steps whose call compacted first. */
  compacted: Set<number>;
  state: RunState;
  largest: number;
}

/** One whole run, step by step, with every checkpoint timed. */
async function sample(store: Store | null, limits: RunLimits): Promise<Sample> {
  let state = createRun({
    runId: `bench-${runCounter++}`,
    requester: { userId: 'UBENCH', teamId: 'TBENCH' },
    systemPrompt: 'You are loopgate (bench). Answer briefly.',
    question: 'Check every row.',
    limits,
    now: Date.now(),
  });
  const persist: number[] = [];
  const compactionSaves: number[] = [];
  let checkpoint: EngineDeps['checkpoint'];
  let release = async (): Promise<void> => {};
  if (store) {
    await store.runs.createRun(state, slack(runCounter));
    const lease = await store.leases.acquire(state.runId, 'bench', 600_000);
    if (!lease.acquired) throw new Error('lease busy');
    const persisted = { messages: state.messages.length, evidence: 0 };
    const checkpointer = new RunCheckpointer(store.runs, state.runId, lease.fence, persisted);
    let records = 0;
    checkpoint = async (s) => {
      const t0 = performance.now();
      await checkpointer.checkpoint(s);
      const spent = performance.now() - t0;
      const now = s.compactions?.length ?? 0;
      if (now > records) compactionSaves.push(spent);
      else persist[s.step] = (persist[s.step] ?? 0) + spent;
      records = now;
    };
    const runId = state.runId;
    release = async () => {
      await store.leases.release(runId, lease.fence);
    };
  }
  const m = model();
  const deps: EngineDeps = {
    model: m,
    tools: new Map([[report.name, report]]),
    clock: { now: () => Date.now() },
    emit: () => {},
    logger,
    ...(checkpoint ? { checkpoint } : {}),
  };
  const engine: number[] = [];
  const compacted = new Set<number>();
  const persisting = () =>
    persist.reduce((a, b) => a + (b ?? 0), 0) + compactionSaves.reduce((a, b) => a + b, 0);
  while (!state.stopReason) {
    const before = state.compactions?.length ?? 0;
    const persistedBefore = persisting();
    const t0 = performance.now();
    state = (await step(state, deps)).state;
    const spent = performance.now() - t0 - (persisting() - persistedBefore);
    engine[state.step] = (engine[state.step] ?? 0) + spent;
    if ((state.compactions?.length ?? 0) > before) compacted.add(state.step);
  }
  if (state.stopReason !== 'completed') throw new Error(`bench run ended with ${state.stopReason}`);
  await release();
  return { persist, compactionSaves, engine, compacted, state, largest: m.largest };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const ms = (x: number) => `${x.toFixed(3)} ms`;

function bucketMedian(
  samples: Sample[],
  pick: (s: Sample) => number[],
  [from, to]: [number, number],
  skipCompacted: boolean,
) {
  const values: number[] = [];
  for (const s of samples) {
    for (let i = from; i <= to; i++) {
      const v = pick(s)[i];
      if (v !== undefined && !(skipCompacted && s.compacted.has(i))) values.push(v);
    }
  }
  return median(values);
}

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
  const redis = createRedisConnection(REDIS_URL, 'store');
  const store = createStore(redis, { prefix: `{${bare}}` });
  try {
    await sample(store, withWindow); // warm-up: scripts loaded, JIT warm
    const stored: Sample[] = [];
    for (let i = 0; i < RUNS; i++) stored.push(await sample(store, withWindow));
    const compactions = stored[0]!.state.compactions?.length ?? 0;
    console.log(
      `compaction: ${STEPS}-step runs in an 8000-token window, ${compactions} compactions each (median of ${RUNS} runs per figure)`,
    );
    for (const bucket of BUCKETS) {
      console.log(
        `compaction: persistence per step at steps ${String(bucket[0]).padStart(3)}-${String(bucket[1]).padStart(3)}: ` +
          `${ms(bucketMedian(stored, (s) => s.persist, bucket, false))} (two checkpoints: reply, results)`,
      );
    }
    console.log(
      `compaction: the checkpoint that stores a compaction record (before its step's model call): ${ms(median(stored.flatMap((s) => s.compactionSaves)))}`,
    );
    const first = bucketMedian(stored, (s) => s.persist, BUCKETS[0]!, false);
    const last = bucketMedian(stored, (s) => s.persist, BUCKETS.at(-1)!, false);
    console.log(
      `compaction: persistence per step, steps 191-200 / steps 1-10: ${(last / first).toFixed(2)}x (goal: flat)`,
    );
    const uncompacted: Sample[] = [];
    for (let i = 0; i < RUNS; i++) uncompacted.push(await sample(store, withoutWindow));
    console.log(
      `compaction: the same runs without a window, for comparison: persistence per step at steps 1-10 ` +
        `${ms(bucketMedian(uncompacted, (s) => s.persist, BUCKETS[0]!, false))}, steps 191-200 ` +
        `${ms(bucketMedian(uncompacted, (s) => s.persist, BUCKETS.at(-1)!, false))}`,
    );

    const pings: number[] = [];
    for (let i = 0; i < 2_000; i++) {
      const t0 = performance.now();
      await redis.ping();
      pings.push(performance.now() - t0);
    }
    console.log(`compaction: Redis round trip (PING) for reference: ${ms(median(pings))} median`);

    const plain: Sample[] = [];
    const window: Sample[] = [];
    for (let i = 0; i < RUNS; i++) {
      plain.push(await sample(null, withoutWindow));
      window.push(await sample(null, withWindow));
    }
    for (const [label, runs] of [
      ['no context window (no compaction)', plain],
      ['8000-token window (compaction)', window],
    ] as const) {
      console.log(
        `compaction: engine time per step, ${label}: steps 1-10 ${ms(bucketMedian(runs, (s) => s.engine, BUCKETS[0]!, true))}, ` +
          `steps 191-200 ${ms(bucketMedian(runs, (s) => s.engine, BUCKETS.at(-1)!, true))}; ` +
          `largest request ${runs[0]!.largest} tokens; request at the last step ${requestTokens(modelView(runs[0]!.state), [])} tokens of messages`,
      );
    }
    const s = stored[0]!.state;
    console.log(
      `compaction: header JSON rewritten per step (progress): ${Buffer.byteLength(changingJson(s))} bytes at step ${s.step}; ` +
        `${s.compactions?.length ?? 0} compaction records appended, ${Buffer.byteLength(JSON.stringify(s.compactions ?? []))} bytes in all`,
    );
  } finally {
    await deleteKeys(redis, `${bare}:*`);
    await redis.quit();
  }
}

await main();
