/**
 * What the load gate relies on in BullMQ (start.ts): `pause(true)` stops a Worker fetching new jobs
 * without waiting for the ones in hand (except at most one that a fetch already waiting in Redis
 * receives), and `resume()` makes it fetch again.
 */
import { randomBytes } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { createRedisConnection } from '../../src/queue/connection.js';

const REDIS_URL = 'redis://127.0.0.1:6379';
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

describe('BullMQ Worker pause(true) / resume()', () => {
  it('holds new jobs back while paused, lets the jobs in hand finish, and takes jobs again on resume', async () => {
    const name = `pause-${randomBytes(4).toString('hex')}`;
    const prefix = `{lgtest-${name}}`;
    const producer = createRedisConnection(REDIS_URL, 'producer');
    const workerConnection = createRedisConnection(REDIS_URL, 'worker');
    const queue = new Queue(name, { connection: producer, prefix });
    const done: string[] = [];
    let releaseFirst: () => void = () => {};
    const firstHeld = new Promise<void>((resolve) => {
      releaseFirst = resolve;
    });
    const worker = new Worker(
      name,
      async (job) => {
        if (job.name === 'first') await firstHeld;
        done.push(job.name);
      },
      { connection: workerConnection, prefix, concurrency: 10, autorun: false },
    );
    worker.on('error', () => {});
    cleanups.push(
      () => producer.quit(),
      () => workerConnection.quit(),
      () => queue.obliterate({ force: true }).then(() => queue.close()),
      () => worker.close(true),
    );
    void worker.run();
    await queue.add('first', {});
    await expect.poll(async () => (await queue.getJobCounts('active')).active, { timeout: 10_000 }).toBe(1);

    await worker.pause(true);
    for (let i = 1; i <= 4; i++) await queue.add(`while-paused-${i}`, {});
    const firstCompleted = new Promise<void>((resolve) => {
      worker.on('completed', (job) => {
        if (job.name === 'first') resolve();
      });
    });
    releaseFirst();
    // Completing a job is where an unpaused worker fetches its next one (in the same Redis call), so
    // once 'first' is recorded completed the loop has had its chance: no fixed wait needed.
    await firstCompleted;
    // The fetch that was already blocked waiting for a job when the pause came may take one.
    const counts = await queue.getJobCounts('wait', 'active', 'completed');
    expect((counts.active ?? 0) + (counts.completed ?? 0)).toBeLessThanOrEqual(2);
    expect(counts.wait).toBeGreaterThanOrEqual(3);

    await worker.resume();
    await expect.poll(() => done.length, { timeout: 10_000 }).toBe(5);
  });
});
