/**
 * Engine overhead per step: a zero-latency model that calls a no-op read tool N times, then answers.
 * Goal (issue 2): <= 0.1 ms per step, and 50-step runs at most 1.3x the per-step cost of 1-step runs.
 */
import { z } from 'zod';
import { defineTool } from '../src/loop/define-tool.js';
import type { ModelPort, ModelReply } from '../src/loop/model-port.js';
import type { EngineDeps } from '../src/loop/ports.js';
import { runUntilPause } from '../src/loop/run.js';
import { createRun } from '../src/loop/state.js';
import type { Logger } from '../src/loop/tool-contract.js';

const logger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => logger };
const noop = defineTool({
  name: 'noop',
  description: 'does nothing',
  effect: 'read',
  parameters: z.object({ n: z.number().int() }),
  execute: async () => 'ok',
});
// Built once, as a worker does: tool schemas are computed once per registry.
const tools = new Map([[noop.name, noop]]);

/** When each model call began, per run: the gaps between them are the engine's work on each step. */
function model(steps: number, calls: number[] = []): ModelPort {
  let i = 0;
  return {
    async complete(): Promise<ModelReply> {
      calls.push(performance.now());
      i++;
      const usage = { inputTokens: 1, outputTokens: 1 };
      if (i > steps) return { content: 'done', toolCalls: [], usage, model: 'bench' };
      return {
        content: null,
        toolCalls: [{ id: `c${i}`, name: 'noop', arguments: `{"n":${i}}` }],
        usage,
        model: 'bench',
      };
    },
  };
}

async function runOnce(steps: number, calls: number[] = []): Promise<number> {
  const deps: EngineDeps = {
    model: model(steps, calls),
    tools,
    clock: { now: () => Date.now() },
    emit: () => {},
    logger,
  };
  const state = createRun({
    runId: 'bench',
    requester: { userId: 'U1' },
    systemPrompt: 'bench',
    question: 'go',
    limits: { maxSteps: steps + 2, maxTokens: 1e9, maxCostUsd: 1e9 },
    now: Date.now(),
  });
  const t0 = performance.now();
  const out = await runUntilPause(state, deps);
  const elapsed = performance.now() - t0;
  if (out.state.stopReason !== 'completed') throw new Error(`bench run ended with ${out.state.stopReason}`);
  return elapsed / (steps + 1); // model calls, including the final answer
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * Per-step cost for 1-, 10- and 50-step runs. The sizes are interleaved over several rounds and the
 * median of the rounds' medians is reported, so a burst of load on a shared machine skews one round,
 * not one size.
 */
export async function benchEngine(rounds = 7): Promise<Record<number, number>> {
  const sizes = [1, 10, 50];
  for (const steps of sizes) for (let i = 0; i < 200; i++) await runOnce(steps); // warm-up
  const perRound: Record<number, number[]> = { 1: [], 10: [], 50: [] };
  for (let r = 0; r < rounds; r++) {
    for (const steps of sizes) {
      const samples: number[] = [];
      const runs = Math.ceil(3_000 / (steps + 1));
      for (let i = 0; i < runs; i++) samples.push(await runOnce(steps));
      perRound[steps]!.push(median(samples));
    }
  }
  return Object.fromEntries(sizes.map((s) => [s, median(perRound[s]!)]));
}

/**
 * The same tool step early and late in one run: the time from one model call to the next (acting on a
 * tool call, recording its result, preparing the next call) at steps 2 and 50 of 50-step runs. This is
 * "flat as history grows" without the mix of step kinds: a 1-step run's average includes its final
 * answer, a cheaper step than a tool step, which weighs half there and 1/51 in a 50-step run.
 */
export async function benchDepth(rounds = 7): Promise<{ early: number; late: number }> {
  const early: number[] = [];
  const late: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const e: number[] = [];
    const l: number[] = [];
    for (let i = 0; i < 150; i++) {
      const calls: number[] = [];
      await runOnce(50, calls);
      e.push(calls[2]! - calls[1]!);
      l.push(calls[50]! - calls[49]!);
    }
    early.push(median(e));
    late.push(median(l));
  }
  return { early: median(early), late: median(late) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await benchEngine();
  for (const [steps, ms] of Object.entries(r)) {
    console.log(`engine: ${steps}-step runs: ${(ms * 1000).toFixed(1)} µs per step (median of rounds)`);
  }
  console.log(
    `engine: 50-step / 1-step per-step ratio: ${(r[50]! / r[1]!).toFixed(2)}x (goal <= 1.3x, <= 100 µs; ` +
      'the 1-step average includes its cheaper final-answer step at half weight)',
  );
  const d = await benchDepth();
  console.log(
    `engine: a tool step at depth 2: ${(d.early * 1000).toFixed(1)} µs, at depth 50: ${(d.late * 1000).toFixed(1)} µs ` +
      `(ratio ${(d.late / d.early).toFixed(2)}x, same run)`,
  );
}
