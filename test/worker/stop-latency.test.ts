/**
 * A cancel reaches the model request in flight at once: the bot records it (the durable truth) and
 * announces it; the worker's cancel watch hears it, reads the record, and aborts the engine's
 * cancelSignal. Prints the stop latency (cancel recorded -> model request aborted) by pub/sub and by
 * polling only, and checks that a run so stopped is cancelled without another model call.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelPort, ModelReply, ModelRequest } from '../../src/loop/model-port.js';
import { addRunJob } from '../../src/queue/runs-queue.js';
import { createHarness } from '../support/worker-harness.js';

type Harness = Awaited<ReturnType<typeof createHarness>>;
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A model that never answers: each request waits for its signal, and the abort time is recorded. */
function hangingModel() {
  const requests: ModelRequest[] = [];
  const aborts: number[] = [];
  const model: ModelPort = {
    model: 'hanging',
    complete: (request) =>
      new Promise<ModelReply>((_, reject) => {
        requests.push(request);
        request.signal.addEventListener(
          'abort',
          () => {
            aborts.push(performance.now());
            reject(new Error('aborted'));
          },
          { once: true },
        );
      }),
  };
  return { model, requests, aborts };
}

const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

async function stopLatencies(cancels: { pubsub: boolean; pollMs?: number }, runs: number) {
  const m = hangingModel();
  h = await createHarness({ model: m.model, cancels });
  h.startWorker('w1', 4);
  const latencies: number[] = [];
  for (let i = 0; i < runs; i++) {
    const runId = await h.enqueueStart(h.startJob(`question ${i}`));
    await h.waitFor('the model request', () => m.requests.length === i + 1);
    // What the bot does on a stop (src/bot/cancel.ts): record (and announce), then queue the cancel job.
    const clicked = performance.now();
    await h.store.runs.requestCancel(runId, { by: 'UREQ', at: Date.now() });
    await addRunJob(h.queue, { name: 'cancel', data: { v: 1, runId, by: 'UREQ' } });
    await h.waitFor('the abort', () => m.aborts.length === i + 1, 5_000);
    latencies.push(m.aborts[i]! - clicked);
    const run = await h.waitForStatus(runId, 'cancelled');
    expect(run.state.stopMessage).toBe('Cancelled by <@UREQ>.');
    expect(run.state.step).toBe(0);
  }
  // No run asked the model again after its cancel.
  expect(m.requests).toHaveLength(runs);
  await h.waitFor('every end posted', () => h!.notifier.of('final').length === runs);
  expect(h.notifier.of('final').map((f) => f.answer.stopReason)).toEqual(Array(runs).fill('cancelled'));
  return latencies;
}

describe('stop latency (cancel recorded -> model request aborted)', { timeout: 60_000 }, () => {
  it('by pub/sub: within tens of milliseconds', async () => {
    const ms = await stopLatencies({ pubsub: true, pollMs: 60_000 }, 20);
    console.log(
      `stop latency by pub/sub over ${ms.length} runs: p50 ${percentile(ms, 50).toFixed(1)} ms, p95 ${percentile(ms, 95).toFixed(1)} ms, max ${Math.max(...ms).toFixed(1)} ms`,
    );
    // Polling is set to a minute here, so only the announcement can have been this fast.
    expect(Math.max(...ms)).toBeLessThan(1_000);
  });

  it('by polling alone (no subscriber, or the announcement lost): within the poll interval', async () => {
    const ms = await stopLatencies({ pubsub: false, pollMs: 200 }, 5);
    console.log(
      `stop latency by polling every 200 ms over ${ms.length} runs: p50 ${percentile(ms, 50).toFixed(1)} ms, max ${Math.max(...ms).toFixed(1)} ms`,
    );
    expect(Math.max(...ms)).toBeLessThan(1_500);
  });
});
