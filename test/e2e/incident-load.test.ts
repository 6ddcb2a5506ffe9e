/**
 * End to end, the incident load in small: 40 people ask within a second, each answer takes 3 model calls
 * of ~200 ms, and loopgate's real processes (`npm run bot`, one `npm run worker` with the default
 * settings) answer them through the fake Slack Web API and the fake OpenAI over HTTP. Every question is
 * answered; runs are worked side by side (far more than the old default of 4 at once); no model call is
 * made twice for the same step of a run (counted at the fake OpenAI); no job is reported stalled; no
 * placeholder is edited after its deletion. Only generous time bounds: the machine may be loaded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Storm, startStorm } from '../support/storm.js';

const QUESTIONS = 40;
let storm: Storm;

beforeAll(async () => {
  storm = await startStorm({ workers: 1, modelDelayMs: 200, callsPerRun: 3 });
}, 120_000);
afterAll(async () => {
  await storm?.close();
}, 60_000);

describe('an incident storm on one worker with the defaults', () => {
  it('answers every question once, in parallel, without stalls, repeats or edits after deletion', async () => {
    const asked = await storm.ask(QUESTIONS, 1_000);
    expect(asked.map((q) => q.status)).toEqual(asked.map(() => 200));
    await expect.poll(() => storm.answeredCount(), { timeout: 150_000, interval: 200 }).toBe(QUESTIONS);
    // Give a late stall check or a redelivered job the time to show itself before judging.
    await new Promise((resolve) => setTimeout(resolve, 2_500));

    const f = storm.figures();
    expect(f.answered, storm.diagnostics()).toBe(QUESTIONS);
    expect(f.modelRequests).toBe(QUESTIONS * 3);
    expect(f.repeatedModelCalls).toBe(0);
    expect(f.stalls, storm.diagnostics()).toBe(0);
    expect(f.editsAfterDelete).toBe(0);
    expect(f.editsNotFound).toBe(0);
    // Runs wait on the model side by side: well beyond a small fixed number of slots.
    expect(f.peakModelInFlight).toBeGreaterThanOrEqual(12);
    // The load gate reports what it saw and whether the worker takes jobs.
    const metrics = await (await fetch(storm.workerMetricsUrls[0]!)).text();
    expect(metrics).toMatch(/^loopgate_worker_event_loop_delay_seconds \d/m);
    expect(metrics).toMatch(/^loopgate_worker_taking_jobs [01]$/m);
    // Each run's placeholder was deleted once its answer was posted.
    expect(storm.slack.callsOf('chat.delete').filter((c) => c.response?.ok === true)).toHaveLength(QUESTIONS);
  }, 200_000);
});
