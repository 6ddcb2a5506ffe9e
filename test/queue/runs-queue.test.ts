import { randomBytes } from 'node:crypto';
import { type Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  addRunJob,
  createRedisConnection,
  createRunsQueue,
  parseJobData,
  RUNS_QUEUE,
  type RunJob,
  type RunsQueue,
} from '../../src/queue/index.js';
import { approvalIdFor } from '../../src/store/index.js';

const URL = 'redis://127.0.0.1:6379';
const start: RunJob = {
  name: 'start',
  data: {
    v: 1,
    eventId: 'Ev08ABCDEF',
    teamId: 'T0TEAM',
    channelId: 'C0OPS',
    threadTs: '1767000000.000100',
    messageTs: '1767000000.000100',
    userId: 'U0ALICE',
    text: 'hello',
    kind: 'mention',
    receivedAt: 1,
  },
};

let prefix: string;
let producer: Redis;
let queue: RunsQueue;
const closers: Array<() => Promise<unknown>> = [];

beforeEach(() => {
  prefix = `{lgtest-${randomBytes(6).toString('hex')}}`;
  producer = createRedisConnection(URL, 'producer');
  queue = createRunsQueue(producer, prefix);
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await queue.obliterate({ force: true });
  await queue.close();
  await producer.quit();
});

describe('runs queue', () => {
  it('keeps every queue key in the prefix hash slot', async () => {
    await addRunJob(queue, start);
    const keys = await producer.keys(`${prefix}:*`);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key.startsWith(`${prefix}:${RUNS_QUEUE}:`)).toBe(true);
  });

  it('adds a duplicate start (Slack retry) and a duplicate resume (double click) once', async () => {
    await addRunJob(queue, start);
    await addRunJob(queue, start);
    const approvalId = approvalIdFor('r-Ev08ABCDEF', 'call_1');
    const resume: RunJob = { name: 'resume', data: { v: 1, runId: 'r-Ev08ABCDEF', approvalId } };
    await addRunJob(queue, resume);
    await addRunJob(queue, resume);
    const jobs = await queue.getJobs(['waiting']);
    expect(jobs.map((j) => j.id).sort()).toEqual([`resume-${approvalId}`, 'start-Ev08ABCDEF']);
  });

  it('delays an expire job until the approval expires', async () => {
    const approvalId = approvalIdFor('r-Ev08ABCDEF', 'call_1');
    const job = await addRunJob(
      queue,
      { name: 'expire', data: { v: 1, runId: 'r-Ev08ABCDEF', approvalId } },
      60_000,
    );
    expect(await job.getState()).toBe('delayed');
    expect(job.opts.delay).toBe(60_000);
  });

  it('refuses to add bad data', async () => {
    const bad = { name: 'cancel', data: { v: 1, runId: 'r:1', by: 'U1' } } as RunJob;
    await expect(addRunJob(queue, bad)).rejects.toThrow();
    expect(await queue.getJobCounts('waiting')).toEqual({ waiting: 0 });
  });

  it('fails a job with bad data at once, without retries, when the worker parses it', async () => {
    const workerConnection = createRedisConnection(URL, 'worker');
    const seen: string[] = [];
    const worker = new Worker(
      RUNS_QUEUE,
      async (job: Job) => {
        const parsed = parseJobData(job.name, job.data);
        seen.push(parsed.name);
      },
      { connection: workerConnection, prefix },
    );
    worker.on('error', () => {});
    closers.push(
      () => workerConnection.quit(),
      () => worker.close(),
    );
    const failed = new Promise<Job | undefined>((resolve) => worker.on('failed', (job) => resolve(job)));
    // Bypass addRunJob's validation: a job written by an older or broken producer.
    await queue.add('start', { ...start.data, kind: 'reaction' } as never, {
      attempts: 5,
      jobId: 'start-bad',
    });
    const job = await failed;
    expect(job?.attemptsMade).toBe(1);
    expect(job?.failedReason).toMatch(/bad start job data/);
    expect(await job?.getState()).toBe('failed');
    expect(seen).toEqual([]);
  });
});

describe('connections', () => {
  it('configures each role for its use', async () => {
    const worker = createRedisConnection(URL, 'worker');
    const store = createRedisConnection(URL, 'store');
    try {
      expect(worker.options.maxRetriesPerRequest).toBeNull();
      expect(worker.options.keyPrefix ?? '').toBe('');
      expect(store.options.maxRetriesPerRequest).toBe(20);
      expect(producer.options.enableOfflineQueue).toBe(false);
      expect(await store.client('GETNAME')).toBe('loopgate-store');
      expect(() => createRedisConnection(URL, 'store', { keyPrefix: 'x:' } as never)).toThrow(TypeError);
    } finally {
      await worker.quit();
      await store.quit();
    }
  });
});
