/**
 * A run that has compacted its history, handed back by a worker that shuts down and continued by
 * another: the next worker loads the compactions with the run and sends the model exactly the view the
 * stored run gives (system prompt, question, summary, the messages after the cut).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { modelView } from '../../src/loop/context.js';
import { defineTool } from '../../src/loop/define-tool.js';
import type { AnyTool } from '../../src/loop/tool-contract.js';
import { call, type ScriptStep } from '../support/engine.js';
import { contextLimits } from '../support/memory-results.js';
import { windowModel } from '../support/window-model.js';
import { createHarness } from '../support/worker-harness.js';

type Harness = Awaited<ReturnType<typeof createHarness>>;
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const report = defineTool({
  name: 'report',
  description: 'A status report of one row',
  effect: 'read',
  parameters: z.object({ row: z.number().int() }),
  async execute(args) {
    return Array.from(
      { length: 40 },
      (_, i) => `row ${args.row}.${i}: latency ${(args.row * 13 + i) % 300} ms`,
    ).join('\n');
  },
});

const STEPS = 24;
const HAND_BACK_AT = 14;

describe('worker: a compacted run continued by another worker', () => {
  it('gives the model the view the stored run gives, and finishes with the history whole', async () => {
    let harness: Harness | undefined;
    const script: ScriptStep[] = Array.from({ length: STEPS }, (_, i): ScriptStep => {
      const step: ScriptStep = { calls: [call('report', { row: i + 1 })] };
      // The first worker is asked to shut down while this step runs: it hands the run back after it.
      return i + 1 === HAND_BACK_AT
        ? () => {
            harness?.setStopping(true);
            return step;
          }
        : step;
    });
    script.push({ text: 'All rows are ok.' });
    const model = windowModel(script, { windowTokens: 8_000 });
    h = await createHarness({
      model,
      tools: new Map<string, AnyTool>([['report', report]]),
      limits: {
        maxSteps: 40,
        maxTokens: 100_000_000,
        context: contextLimits({ windowTokens: 8_000, summaryTokens: 300 }),
      },
    });
    harness = h;
    const first = h.startWorker('first');
    const runId = await h.enqueueStart(h.startJob('check every row'));
    await h.waitFor('the first worker to hand the run back', async () => {
      const run = await h!.store.runs.loadRun(runId);
      return (
        run &&
        run.state.step === HAND_BACK_AT &&
        run.state.turn === null &&
        model.requests.length === HAND_BACK_AT
      );
    });
    await h.stopWorker(first);
    const stored = await h.store.runs.loadRun(runId);
    expect(stored?.state.compactions?.length).toBeGreaterThan(0);
    const before = model.requests.length;

    h.setStopping(false);
    h.startWorker('second');
    const run = await h.waitForStatus(runId, 'completed', 20_000);
    // The second worker's first request is the view of the run as stored (with the compaction it made
    // first, if the stored view was over the threshold: that one's step is the hand-back step).
    const resumed = model.requests[before]!.messages;
    const compactions = (run.state.compactions ?? []).filter((c) => c.step <= HAND_BACK_AT);
    expect(compactions.slice(0, stored!.state.compactions!.length)).toEqual(stored!.state.compactions);
    expect(resumed).toEqual(modelView({ ...stored!.state, compactions }));
    expect(resumed[2]).toMatchObject({
      role: 'assistant',
      content: expect.stringContaining('[loopgate] The earlier part'),
    });
    expect(run.state.answer).toEqual(['All rows are ok.']);
    expect(run.state.messages).toHaveLength(2 + STEPS * 2 + 1);
    expect(model.problems).toEqual([]);
    expect(model.refused).toBe(0);
  });
});
