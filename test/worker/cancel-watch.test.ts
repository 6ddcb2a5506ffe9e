/**
 * The worker's cancel watch on real Redis: an announcement only speeds up a cancel that is recorded
 * (one without the record aborts nothing), polling finds a cancel nobody announced, and a stopped watch
 * no longer aborts.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { CancelWatch } from '../../src/worker/cancel-watch.js';
import { silentLogger } from '../support/engine.js';

const REDIS_URL = 'redis://127.0.0.1:6379';
const opened: Redis[] = [];
const watches: CancelWatch[] = [];
afterEach(async () => {
  await Promise.all(watches.splice(0).map((w) => w.close()));
  await Promise.all(opened.splice(0).map((c) => c.quit()));
});

async function watchWith(recorded: Set<string>, pollMs: number, checked: string[] = []) {
  const channel = `lgtest-${randomBytes(5).toString('hex')}:cancels`;
  const subscriber = new Redis(REDIS_URL);
  const publisher = new Redis(REDIS_URL);
  opened.push(publisher);
  const watch = new CancelWatch({
    isCancelled: async (runId) => {
      checked.push(runId);
      return recorded.has(runId);
    },
    subscriber,
    channel,
    pollMs,
    logger: silentLogger,
  });
  watches.push(watch);
  await watch.start();
  return { watch, announce: (runId: string) => publisher.publish(channel, runId) };
}

const until = async (what: string, probe: () => boolean, timeoutMs = 3_000) => {
  const end = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('CancelWatch', () => {
  it('an announcement aborts only a run whose cancel is recorded, and only its watchers', async () => {
    const recorded = new Set<string>();
    const { watch, announce } = await watchWith(recorded, 60_000);
    const a = watch.watch('r-a');
    const b = watch.watch('r-b');
    // Announced without a record (a forged or early message): nothing happens.
    await announce('r-a');
    const probe = watch.watch('r-probe');
    recorded.add('r-probe');
    await announce('r-probe');
    await until('the probe', () => probe.signal.aborted);
    expect(a.signal.aborted).toBe(false);
    // Recorded, then announced: aborted at once.
    recorded.add('r-a');
    await announce('r-a');
    await until('r-a aborted', () => a.signal.aborted);
    expect(b.signal.aborted).toBe(false);
    expect(a.abortedAt()).toBeTypeOf('number');
  });

  it('polling finds a recorded cancel that was never announced; a stopped watch aborts nothing', async () => {
    const recorded = new Set<string>();
    const checked: string[] = [];
    const { watch } = await watchWith(recorded, 50, checked);
    const kept = watch.watch('r-kept');
    const stopped = watch.watch('r-stopped');
    stopped.stop();
    recorded.add('r-kept');
    recorded.add('r-stopped');
    await until('r-kept aborted by polling', () => kept.signal.aborted);
    // Three more poll rounds: the stopped watch is never checked, nor aborted.
    const seen = checked.length;
    await until('three more poll rounds', () => checked.length >= seen + 3);
    expect(checked).not.toContain('r-stopped');
    expect(stopped.signal.aborted).toBe(false);
  });
});
