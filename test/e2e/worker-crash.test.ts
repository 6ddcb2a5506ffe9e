/**
 * Worker processes for real: `tsx src/worker/main.ts` against real Redis, a fake OpenAI, a fake Slack and
 * a slow local HTTP endpoint the model asks `http_get` to fetch. A worker killed mid-run loses nothing; a
 * worker told to stop finishes its step and hands the run over; a bad policy file stops the worker at once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { FakeStep, RecordedRequest } from '../fakes/openai-server.js';
import { killAllLoopgate, spawnLoopgate } from './support/loopgate-process.js';
import { tempDir } from './support/temp-config.js';
import { CHANNEL, startWorld, type World } from './support/world.js';

const HOLD_MS = 3_000;
const ANSWER = 'The status page says all systems are operational.';

let world: World | undefined;
afterEach(async () => {
  await killAllLoopgate();
  await world?.close();
  world = undefined;
});

/** The model asks to fetch the slow endpoint first, then answers from the tool's result. */
const fetchThenAnswer =
  (url: string): FakeStep =>
  (request: RecordedRequest): FakeStep => {
    const last = request.body.messages.at(-1);
    if (last?.role === 'tool') return { content: ANSWER };
    return { toolCalls: [{ name: 'http_get', arguments: JSON.stringify({ url }) }] };
  };

const isPlaceholderIn = (threadTs: string) => (call: { args: Record<string, unknown> }) =>
  call.args.thread_ts === threadTs && String(call.args.text).startsWith(':hourglass');

/** Progress placeholders still visible in the thread. */
const placeholders = (w: World, threadTs: string) =>
  w.slack.thread(CHANNEL, threadTs).filter((m) => m.text.startsWith(':hourglass'));

const isPostedAnswer = (threadTs: string) => (call: { args: Record<string, unknown> }) =>
  call.args.thread_ts === threadTs && String(call.args.text).includes(ANSWER);

describe('worker processes', () => {
  it('a worker SIGKILLed mid-run: another one finishes the run, reusing the persisted model reply', async () => {
    world = await startWorld({ script: [], holdMs: HOLD_MS });
    const w = world;
    w.openai.push(fetchThenAnswer(w.slowUrl), fetchThenAnswer(w.slowUrl));
    const first = w.startWorker();
    const { runId, threadTs } = await w.ask('Is the status page green?');

    await w.waitFor('the slow endpoint to be called', async () => w.slow.requests.length === 1, 20_000);
    expect(w.openai.requests).toHaveLength(1);
    // The model's reply is already in Redis: the turn with the http_get call is open, its result missing.
    const beforeCrash = await w.loadRun(runId);
    expect(beforeCrash?.state.turn?.slots.map((s) => [s.tool, s.result])).toEqual([['http_get', null]]);
    first.kill('SIGKILL');
    const killedAt = performance.now();
    const exit = await first.exit;
    expect(exit.signal).toBe('SIGKILL');

    const second = w.startWorker();
    const done = await w.waitFor(
      'the run to complete in the second worker',
      async () => {
        const run = await w.loadRun(runId);
        return run?.state.status === 'completed' ? run : null;
      },
      30_000,
    );
    // The bound: a crashed worker's run continues within about 30 s (a new process must boot too).
    expect(performance.now() - killedAt).toBeLessThan(30_000);
    expect(done.state.answer).toEqual([ANSWER]);
    // Exactly two model calls: the first reply (the http_get call) was persisted and reused, not asked again.
    expect(w.openai.requests).toHaveLength(2);
    expect(w.openai.malformed).toEqual([]);
    // The read was repeated by the second worker (http_get is idempotent; its first attempt never finished).
    expect(w.slow.requests).toHaveLength(2);
    const toolResults = done.state.messages.filter((m) => m.role === 'tool');
    expect(toolResults).toHaveLength(1);
    expect(toolResults[0]?.content).toContain('all systems operational');

    await w.slack.waitForCall('chat.postMessage', isPostedAnswer(threadTs), 5_000);
    expect(w.slack.callsOf('chat.postMessage').filter(isPostedAnswer(threadTs))).toHaveLength(1);
    await second.waitForLog((l) => l.msg === 'job stalled; another worker takes it over', 'job stalled');
  }, 75_000);

  it('a worker given SIGTERM mid-step finishes the step, hands the run over and exits 0', async () => {
    world = await startWorld({ script: [], holdMs: HOLD_MS });
    const w = world;
    w.openai.push(fetchThenAnswer(w.slowUrl), fetchThenAnswer(w.slowUrl));
    const first = w.startWorker();
    const { runId, threadTs } = await w.ask('Is the status page green?');

    await w.waitFor('the slow endpoint to be called', async () => w.slow.requests.length === 1, 20_000);
    const signalledAt = performance.now();
    first.signal('SIGTERM');
    await first.waitForLog((l) => l.msg.startsWith('stopping'), 'stopping', 5_000);
    // A job added while the worker stops is not taken by it.
    const later = await w.ask('And the other one?');

    const exit = await first.exit;
    expect(exit.code).toBe(0);
    // It waited for the step in flight (the slow response, sent HOLD_MS after the request came) and stayed
    // well within the 25 s grace period.
    expect(w.slowAnswers).toHaveLength(1);
    expect(exit.at).toBeGreaterThan(w.slowAnswers[0] ?? Number.POSITIVE_INFINITY);
    expect(exit.at - signalledAt).toBeLessThan(15_000);
    expect(first.logs().some((l) => l.msg.includes('the run is handed back to the queue'))).toBe(true);

    // The step's result is stored; nothing after it was started.
    const handedOver = await w.loadRun(runId);
    expect(handedOver?.state.status).toBe('running');
    expect(handedOver?.state.messages.filter((m) => m.role === 'tool')).toHaveLength(1);
    expect(w.openai.requests).toHaveLength(1);
    expect(await w.loadRun(later.runId)).toBeNull();

    w.openai.push(fetchThenAnswer(w.slowUrl), fetchThenAnswer(w.slowUrl));
    w.startWorker();
    const done = await w.waitFor(
      'the run to complete in the second worker',
      async () => {
        const run = await w.loadRun(runId);
        return run?.state.status === 'completed' ? run : null;
      },
      20_000,
    );
    expect(done.state.answer).toEqual([ANSWER]);
    expect(done.state.messages.filter((m) => m.role === 'tool')).toHaveLength(1);
    await w.slack.waitForCall('chat.postMessage', isPostedAnswer(threadTs), 5_000);
    // The placeholder was handed over with the run: the second worker edited and removed the same one.
    await w.waitFor(
      'the placeholder to be removed',
      async () => placeholders(w, threadTs).length === 0,
      5_000,
    );
    expect(w.slack.callsOf('chat.postMessage').filter(isPlaceholderIn(threadTs))).toHaveLength(1);
    await w.waitFor(
      'the message queued during shutdown to be answered',
      async () => (await w.loadRun(later.runId))?.state.status === 'completed',
      15_000,
    );
    // The finished step was not redone: 1 model request by the stopped worker and 1 to finish its run,
    // 2 for the later question; one fetch per run.
    expect(w.openai.requests).toHaveLength(4);
    expect(w.slow.requests).toHaveLength(2);
  }, 50_000);

  it('a bad policy file: the worker exits 1 naming the key', async () => {
    const dir = tempDir();
    try {
      const path = dir.write('bad.yaml', 'budgets:\n  maxSteps: 0\n');
      const worker = spawnLoopgate(
        'worker',
        {
          REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
          LOOPGATE_PREFIX: '{lgbadconfig}',
          SLACK_BOT_TOKEN: 'xoxb-test',
          SLACK_API_URL: 'http://127.0.0.1:9/api/',
          OPENAI_API_KEY: 'sk-test',
          OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
          LOOPGATE_CONFIG: path,
          WORKER_LOCK_MS: '2000',
          LOG_LEVEL: 'info',
          METRICS_PORT: '0',
        },
        dir.dir,
      );
      const exit = await worker.exit;
      expect(exit.code).toBe(1);
      expect(worker.stderr()).toContain(`invalid configuration in ${path}`);
      expect(worker.stderr()).toContain('budgets.maxSteps');
      expect(worker.stderr()).not.toMatch(/\n\s+at /);
      expect(worker.logs().map((l) => l.msg)).not.toContain('worker started');
    } finally {
      dir.remove();
    }
  }, 20_000);
});
