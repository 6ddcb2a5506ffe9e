/**
 * Run store persistence cost on the local Redis (issue 3). Prints:
 * - per-step persistence: one saveStep appending an assistant + tool message pair and one evidence
 *   record, on runs with 1, 10, 50 and 200 steps of history (goal <= 0.3 ms, flat with history);
 *   also the engine's cadence of two checkpoints per step (after the reply, after the tool results);
 * - loading a 50-step run (goal <= 1 ms);
 * - Redis bytes per run (MEMORY USAGE over its keys) against the JSON bytes of its messages
 *   (goal <= 1.3x).
 */
import { randomBytes } from 'node:crypto';
import type { Message } from '../src/loop/messages.js';
import type { Evidence, RunState } from '../src/loop/run-state.js';
import { createRedisConnection } from '../src/queue/connection.js';
import { createStore, type SlackContext, type Store } from '../src/store/index.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const T0 = Date.now();
const slack: SlackContext = {
  teamId: 'T0BENCH',
  channelId: 'C0BENCH',
  threadTs: '1.000100',
  requestMessageTs: '1.000100',
};

function pair(i: number): { messages: Message[]; evidence: Evidence } {
  return {
    messages: [
      {
        role: 'assistant',
        content: `Step ${i}: checking the next metric.`,
        toolCalls: [
          { id: `call_${i}`, name: 'prometheus_query', arguments: `{"query":"up{job=\\"svc-${i}\\"}"}` },
        ],
      },
      {
        role: 'tool',
        toolCallId: `call_${i}`,
        name: 'prometheus_query',
        content: `{"ok":true,"data":{"resultType":"vector","result":[{"metric":{"job":"svc-${i}","instance":"10.0.0.${i % 250}:9100"},"value":[1767000000,"1"]}]}}`,
      },
    ],
    evidence: {
      toolCallId: `call_${i}`,
      tool: 'prometheus_query',
      kind: 'result',
      ok: true,
      summary: `svc-${i} up`,
      at: T0 + i,
    },
  };
}

function stateWithSteps(runId: string, steps: number): RunState {
  const messages: Message[] = [
    { role: 'system', content: 'You are loopgate, an operations assistant. Answer briefly, cite evidence.' },
    { role: 'user', content: 'Is the payments service healthy in every region?' },
  ];
  const evidence: Evidence[] = [];
  for (let i = 1; i <= steps; i++) {
    const p = pair(i);
    messages.push(...p.messages);
    evidence.push(p.evidence);
  }
  return {
    version: 1,
    runId,
    status: 'running',
    requester: { userId: 'U0ALICE', teamId: 'T0BENCH' },
    question: 'bench',
    messages,
    step: steps,
    usage: {
      inputTokens: 900 * steps,
      outputTokens: 40 * steps,
      costUsd: 0.0004 * steps,
      activeMs: 0,
      activeSince: T0,
    },
    limits: {
      maxSteps: 500,
      deadlineMs: 300_000,
      maxTokens: 2_000_000,
      maxReplyTokens: 4096,
      maxCostUsd: 5,
      prices: { 'gpt-4.1-mini': { inputPerMTok: 0.4, outputPerMTok: 1.6 } },
      defaultPrice: { inputPerMTok: 0.4, outputPerMTok: 1.6 },
      maxConsecutiveToolErrors: 3,
      maxIdenticalCalls: 3,
      maxToolCallsPerReply: 16,
      maxGatedCallsPerPause: 5,
      maxObservationChars: 16_000,
      toolTimeoutMs: 30_000,
      maxAnswerRetries: 2,
      maxAnswerChars: 36_000,
    },
    turn: null,
    actions: [],
    evidence,
    rejected: {},
    brakes: {
      consecutiveToolErrors: 0,
      lastCallSignature: `prometheus_query:${'f'.repeat(64)}`,
      identicalCalls: 1,
    },
    answerRetries: 0,
    answer: null,
    stopReason: null,
    stopMessage: null,
    createdAt: T0,
    updatedAt: T0 + steps,
  };
}

/** The state after one more step: its reply and its tool result (and, for `split`, the reply alone). */
function nextStep(state: RunState): { reply: RunState; full: RunState } {
  const p = pair(state.step + 1);
  const reply = {
    ...state,
    messages: [...state.messages, p.messages[0]!],
    step: state.step + 1,
    updatedAt: state.updatedAt + 1,
  };
  const full = {
    ...reply,
    messages: [...reply.messages, p.messages[1]!],
    evidence: [...state.evidence, p.evidence],
  };
  return { reply, full };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)]!;
const fmt = (ms: number) => `${(ms * 1000).toFixed(0)} µs`;

let runCounter = 0;
async function freshRun(store: Store, steps: number) {
  const state = stateWithSteps(`bench-${steps}-${runCounter++}`, steps);
  const { persisted } = (await store.runs.createRun(state, slack)).run;
  const lease = await store.leases.acquire(state.runId, 'bench', 60_000);
  if (!lease.acquired) throw new Error('lease busy');
  return { state, persisted, fence: lease.fence };
}

async function perStep(store: Store, history: number, samples: number) {
  const one: number[] = [];
  const two: number[] = [];
  for (let i = 0; i < samples; i++) {
    // A fresh run per sample, so every sample persists exactly step `history + 1`.
    const run = await freshRun(store, history);
    const { full } = nextStep(run.state);
    let t0 = performance.now();
    await store.runs.saveStep({
      runId: run.state.runId,
      fence: run.fence,
      state: full,
      persisted: run.persisted,
    });
    one.push(performance.now() - t0);
    await dropRun(store, run.state.runId);

    const split = await freshRun(store, history);
    const s = nextStep(split.state);
    t0 = performance.now();
    const mid = await store.runs.saveStep({
      runId: split.state.runId,
      fence: split.fence,
      state: s.reply,
      persisted: split.persisted,
    });
    await store.runs.saveStep({
      runId: split.state.runId,
      fence: split.fence,
      state: s.full,
      persisted: mid.persisted,
    });
    two.push(performance.now() - t0);
    await dropRun(store, split.state.runId);
  }
  return { one, two };
}

/** Deletes a sample run at once, so Redis stays small and every sample meets the same server. */
async function dropRun(store: Store, runId: string): Promise<void> {
  const keys = store.context.keys.run(runId);
  await store.context.redis.del(keys.header, keys.messages, keys.evidence, keys.lease);
}

async function runBytes(store: Store, runId: string): Promise<number> {
  const keys = store.context.keys.run(runId);
  const redis = store.context.redis;
  let total = 0;
  for (const key of [keys.header, keys.messages, keys.evidence, keys.lease]) {
    total += Number((await redis.memory('USAGE', key, 'SAMPLES', 0)) ?? 0);
  }
  return total;
}

async function main() {
  const prefix = `lgbench-${randomBytes(4).toString('hex')}`;
  const redis = createRedisConnection(REDIS_URL, 'store');
  const store = createStore(redis, { prefix: `{${prefix}}` });
  try {
    await perStep(store, 10, 300); // warm-up: scripts loaded, JIT warm
    const results: Record<number, { one: number[]; two: number[] }> = {};
    for (const history of [1, 10, 50, 200]) results[history] = await perStep(store, history, 1000);
    for (const [history, r] of Object.entries(results)) {
      console.log(
        `store: saveStep of one step at ${history.padStart(3)} steps of history: ${fmt(median(r.one))} median, ` +
          `${fmt(p99(r.one))} p99; two checkpoints per step: ${fmt(median(r.two))} median`,
      );
    }
    console.log(
      `store: 200-step / 1-step saveStep ratio ${(median(results[200]!.one) / median(results[1]!.one)).toFixed(2)}x ` +
        `(goal <= 0.3 ms, flat)`,
    );

    const pings: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const t0 = performance.now();
      await redis.ping();
      pings.push(performance.now() - t0);
    }
    console.log(`store: Redis round trip (PING) for reference: ${fmt(median(pings))} median`);

    const loadRun = await freshRun(store, 50);
    const loads: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const t0 = performance.now();
      const loaded = await store.runs.loadRun(loadRun.state.runId);
      loads.push(performance.now() - t0);
      if (loaded?.state.messages.length !== loadRun.state.messages.length) throw new Error('bad load');
    }
    console.log(
      `store: loadRun of a 50-step run: ${fmt(median(loads.slice(200)))} median, ${fmt(p99(loads.slice(200)))} p99 (goal <= 1 ms)`,
    );

    for (const steps of [50, 200]) {
      // Built step by step through saveStep, as a worker would.
      const run = await freshRun(store, 0);
      let state = run.state;
      let persisted = run.persisted;
      for (let i = 0; i < steps; i++) {
        state = nextStep(state).full;
        persisted = (await store.runs.saveStep({ runId: state.runId, fence: run.fence, state, persisted }))
          .persisted;
      }
      const bytes = await runBytes(store, state.runId);
      const messageBytes = Buffer.byteLength(JSON.stringify(state.messages));
      const { messages, evidence, ...header } = state;
      const storedJson =
        messageBytes +
        Buffer.byteLength(JSON.stringify(evidence)) +
        Buffer.byteLength(JSON.stringify(header));
      console.log(
        `store: ${steps}-step run: ${bytes} bytes in Redis (header, messages, evidence, lease) = ` +
          `${(bytes / messageBytes).toFixed(2)}x its ${messageBytes} bytes of message JSON (goal <= 1.3x); ` +
          `${(bytes / storedJson).toFixed(2)}x all the JSON it keeps (messages + ${evidence.length} evidence records + header)`,
      );
    }
  } finally {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
    await redis.quit();
  }
}

await main();
