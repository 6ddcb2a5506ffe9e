/**
 * Running workers, for real (`tsx src/worker/main.ts` against real Redis, a fake OpenAI and a fake Slack):
 * several on one host, each with its own METRICS_PORT, and one given a port already taken still taking
 * jobs, saying plainly that it serves no metrics; a shutdown bounded in time even when a step is stuck in a model call, its job handed
 * back to the queue for the next worker.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../demo/lib/free-port.js';
import { startJobId } from '../../src/queue/job-ids.js';
import { type OwnRedis, ownRedis } from '../support/redis-server.js';
import { killAllLoopgate } from './support/loopgate-process.js';
import { startWorld, type World } from './support/world.js';

/** The worker's grace period for current steps on shutdown (SHUTDOWN_GRACE_MS in src/worker/start.ts). */
const GRACE_MS = 25_000;
/** Its whole shutdown, at most (SHUTDOWN_LIMIT_MS). */
const LIMIT_MS = 28_000;
const ANSWER = 'All systems are operational.';

let world: World | undefined;
let redis: OwnRedis | undefined;
afterEach(async () => {
  await killAllLoopgate();
  await redis?.start();
  await world?.close();
  await redis?.remove();
  world = undefined;
  redis = undefined;
});

const metricsOf = (port: number) =>
  fetch(`http://127.0.0.1:${port}/metrics`).then(
    (r) => r.status === 200,
    () => false,
  );

describe('worker processes on one host', () => {
  it('start side by side with their own METRICS_PORT; one on a taken port says it serves no metrics and takes jobs', async () => {
    world = await startWorld({ script: [], holdMs: 0 });
    const w = world;
    const [a, b] = [await freePort(), await freePort()];
    const first = w.startWorker({ METRICS_PORT: String(a) });
    const second = w.startWorker({ METRICS_PORT: String(b) });
    await Promise.all([first, second].map((p) => p.waitForLog((l) => l.msg === 'worker started', 'started')));
    expect(await metricsOf(a)).toBe(true);
    expect(await metricsOf(b)).toBe(true);

    // A rolling restart on one host: the new worker gets the port the old one still holds.
    const clash = w.startWorker({ METRICS_PORT: String(a) });
    await clash.waitForLog((l) => l.msg === 'worker started', 'the clashing worker started');
    const notice = clash.logs().find((l) => l.variable === 'METRICS_PORT');
    expect(notice?.level).toBe('warn');
    expect(notice?.msg).toBe(
      `METRICS_PORT ${a} is already in use on this host: this worker serves no /metrics, /healthz or /readyz, and takes jobs as usual; give each worker on one host its own METRICS_PORT (or 0 for none)`,
    );
    expect(clash.stderr()).toBe('');
    // And through Redis, for the bot's /readyz to list.
    await w.waitFor(
      'the clashing worker to leave its notice',
      async () =>
        (await w.store.workerNotices.withoutMetrics()).some((n) => n.pid === clash.pid && n.port === a),
      20_000,
    );
    // The two running ones were not disturbed.
    expect(first.exited() || second.exited()).toBe(false);
    expect(await metricsOf(a)).toBe(true);

    // With the others gone, the clashing worker answers a question alone.
    first.kill('SIGKILL');
    second.kill('SIGKILL');
    await Promise.all([first.exit, second.exit]);
    w.openai.push({ content: ANSWER });
    const { runId } = await w.ask('Is the status page green?');
    const done = await w.waitFor(
      'the run to complete in the worker without metrics',
      async () => {
        const run = await w.loadRun(runId);
        return run?.state.status === 'completed' ? run : null;
      },
      30_000,
    );
    expect(done.state.answer).toEqual([ANSWER]);
    expect(clash.exited()).toBe(false);
    // Stopping withdraws the notice.
    clash.signal('SIGTERM');
    expect((await clash.exit).code).toBe(0);
    expect(await w.store.workerNotices.withoutMetrics()).toEqual([]);
  }, 90_000);

  it('SIGTERM while a step is stuck in a model call: exits within the grace period, its job handed back, and the next worker finishes the run', async () => {
    world = await startWorld({ script: [], holdMs: 0 });
    const w = world;
    // The first model call never answers in time; the one after it does.
    w.openai.push({ delayMs: 120_000, step: { content: 'too late' } }, { content: ANSWER });
    const first = w.startWorker();
    const { runId, threadTs, eventId } = await w.ask('Is the status page green?');
    await w.waitFor('the model call to start', async () => w.openai.requests.length === 1, 20_000);

    const signalledAt = performance.now();
    first.signal('SIGTERM');
    const exit = await first.exit;
    expect(exit.code).toBe(0);
    // Waited for the step as long as the grace period allows, and not much longer.
    expect(exit.at - signalledAt).toBeGreaterThan(GRACE_MS - 1_000);
    expect(exit.at - signalledAt).toBeLessThan(GRACE_MS + 5_000);
    expect(first.logs().some((l) => l.msg === 'job handed back to the queue unfinished')).toBe(true);

    // Handed back: waiting for the next worker, not left locked for a stall check to find.
    const job = await w.queue.getJob(startJobId(eventId));
    expect(await job?.getState()).toBe('waiting');

    const second = w.startWorker();
    const done = await w.waitFor(
      'the run to complete in the next worker',
      async () => {
        const run = await w.loadRun(runId);
        return run?.state.status === 'completed' ? run : null;
      },
      30_000,
    );
    expect(done.state.answer).toEqual([ANSWER]);
    // The stuck call never answered, so it was asked again; nothing else was.
    expect(w.openai.requests).toHaveLength(2);
    await w.slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === threadTs && String(c.args.text).includes(ANSWER),
      5_000,
    );
    // Not recovered as a stalled job: no stall counted against it.
    expect(second.logs().some((l) => l.msg === 'job stalled; another worker takes it over')).toBe(false);
    expect((await w.queue.getJob(job?.id ?? ''))?.stalledCounter ?? 0).toBe(0);
  }, 90_000);

  it('SIGTERM while Redis is gone and a step is stuck: the process still exits within its limit, and the run is finished later', async () => {
    redis = await ownRedis();
    await redis.start();
    world = await startWorld({ script: [], holdMs: 0, redisUrl: redis.url });
    const w = world;
    w.openai.push({ delayMs: 120_000, step: { content: 'too late' } }, { content: ANSWER });
    const first = w.startWorker();
    const { runId } = await w.ask('Is the status page green?');
    await w.waitFor('the model call to start', async () => w.openai.requests.length === 1, 20_000);

    await redis.kill();
    const signalledAt = performance.now();
    first.signal('SIGTERM');
    const exit = await first.exit;
    // Nothing could be handed back or closed cleanly: the limit cut the shutdown short.
    expect(exit.at - signalledAt).toBeLessThan(LIMIT_MS + 4_000);
    expect(exit.code).toBe(1);
    expect(first.logs().some((l) => l.msg === 'shutdown took too long; exiting')).toBe(true);

    await redis.start();
    w.startWorker();
    const done = await w.waitFor(
      'the run to complete in the next worker',
      async () => {
        const run = await w.loadRun(runId).catch(() => null);
        return run?.state.status === 'completed' ? run : null;
      },
      45_000,
    );
    expect(done.state.answer).toEqual([ANSWER]);
  }, 120_000);
});
