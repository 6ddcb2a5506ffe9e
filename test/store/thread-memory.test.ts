import { afterEach, describe, expect, it } from 'vitest';
import { type StoreFixture, storeFixture } from './redis-fixture.js';

let fx: StoreFixture;
afterEach(async () => fx.cleanup());

const thread = { teamId: 'T1', channelId: 'C1', threadTs: '1700000000.000100' };
const job = (n: number) => ({ v: 1, eventId: `Ev${n}`, text: `message ${n}` });
const turns = (q: string, a: string) => [
  { role: 'user' as const, content: q },
  { role: 'assistant' as const, content: a },
];

describe('thread memory', () => {
  it('lets one run work in a thread; later messages queue and are handed over in order', async () => {
    fx = storeFixture();
    const threads = fx.store.threads;
    expect(await threads.claim(thread, 'r-1', job(1))).toBe('active');
    expect(await threads.claim(thread, 'r-1', job(1))).toBe('active'); // a redelivered job keeps its claim
    expect(await threads.claim(thread, 'r-2', job(2))).toBe('queued');
    expect(await threads.claim(thread, 'r-2', job(2))).toBe('queued'); // queued once
    expect(await threads.claim(thread, 'r-3', job(3))).toBe('queued');
    expect(await threads.activeRun(thread)).toBe('r-1');

    expect(await threads.release(thread, 'r-1', turns('q1', 'a1'))).toEqual(job(2));
    // The thread waits for the job it was handed to; others still queue, a stranger cannot take it.
    expect(await threads.activeRun(thread)).toBeNull();
    expect(await threads.claim(thread, 'r-9', job(9))).toBe('queued');
    expect(await threads.claim(thread, 'r-2', job(2))).toBe('active');
    expect(await threads.release(thread, 'r-2', turns('q2', 'a2'))).toEqual(job(3));
    expect(await threads.claim(thread, 'r-3', job(3))).toBe('active');
    expect(await threads.release(thread, 'r-3', turns('q3', 'a3'))).toEqual(job(9));
    expect(await threads.claim(thread, 'r-9', job(9))).toBe('active');
    expect(await threads.release(thread, 'r-9', [])).toBeNull();
    expect(await threads.activeRun(thread)).toBeNull();
    expect((await threads.history(thread)).map((t) => t.content)).toEqual([
      'q1',
      'a1',
      'q2',
      'a2',
      'q3',
      'a3',
    ]);
  });

  it('records a run once even when its release is repeated, and ignores a run that is not active', async () => {
    fx = storeFixture();
    const threads = fx.store.threads;
    await threads.claim(thread, 'r-1', job(1));
    await threads.release(thread, 'r-1', turns('q', 'a'));
    await threads.release(thread, 'r-1', turns('q', 'a'));
    await threads.release(thread, 'r-other', turns('x', 'y'));
    expect(await threads.history(thread)).toHaveLength(2);
  });

  it('hands the same queued message over again when the ended run is released again (its worker died)', async () => {
    fx = storeFixture();
    const threads = fx.store.threads;
    await threads.claim(thread, 'r-1', job(1));
    await threads.claim(thread, 'r-2', job(2));
    await threads.claim(thread, 'r-3', job(3));
    expect(await threads.release(thread, 'r-1', turns('q1', 'a1'))).toEqual(job(2));
    // The worker died before starting job 2; the recovered job of r-1 releases again.
    expect(await threads.release(thread, 'r-1', turns('q1', 'a1'))).toEqual(job(2));
    expect(await threads.history(thread)).toHaveLength(2);
    // No other run can use the hand-over to get a job.
    expect(await threads.release(thread, 'r-3', [])).toBeNull();
    expect(await threads.claim(thread, 'r-2', job(2))).toBe('active');
    // Once job 2 took the thread, a late release of r-1 hands nothing over.
    expect(await threads.release(thread, 'r-1', turns('q1', 'a1'))).toBeNull();
    expect(await threads.release(thread, 'r-2', turns('q2', 'a2'))).toEqual(job(3));
    expect(await threads.claim(thread, 'r-3', job(3))).toBe('active');
    expect(await threads.release(thread, 'r-3', [])).toBeNull();
    expect(await threads.activeRun(thread)).toBeNull();
  });

  it('lets a new run replace a finished run that was left marked active', async () => {
    fx = storeFixture();
    const threads = fx.store.threads;
    await threads.claim(thread, 'r-dead', job(1));
    expect(await threads.claim(thread, 'r-2', job(2))).toBe('queued');
    expect(await threads.claim(thread, 'r-2', job(2), 'r-dead')).toBe('active');
    // Taking over removes the job from the inbox: it is not started a second time.
    expect(await threads.release(thread, 'r-2', [])).toBeNull();
  });

  it('queues at most maxQueuedPerThread jobs behind the working run; the next is refused, not queued', async () => {
    fx = storeFixture({ maxQueuedPerThread: 2 });
    const threads = fx.store.threads;
    expect(await threads.claim(thread, 'r-1', job(1))).toBe('active');
    expect(await threads.claim(thread, 'r-2', job(2))).toBe('queued');
    expect(await threads.inboxFull(thread)).toBe(false);
    expect(await threads.claim(thread, 'r-3', job(3))).toBe('queued');
    expect(await threads.inboxFull(thread)).toBe(true);
    expect(await threads.claim(thread, 'r-4', job(4))).toBe('full');
    expect(await threads.claim(thread, 'r-3', job(3))).toBe('queued'); // a redelivered queued job is still queued
    const inbox = fx.store.context.keys.thread(thread.teamId, thread.channelId, thread.threadTs).inbox;
    expect(await fx.redis.llen(inbox)).toBe(2);
    expect(await threads.release(thread, 'r-1', [])).toEqual(job(2));
  });

  it('keeps only the newest turns', async () => {
    fx = storeFixture();
    const threads = fx.store.threads;
    for (let i = 0; i < 30; i++) {
      await threads.claim(thread, `r-${i}`, job(i));
      await threads.release(thread, `r-${i}`, turns(`q${i}`, `a${i}`));
    }
    const history = await threads.history(thread);
    expect(history).toHaveLength(40);
    expect(history[0]!.content).toBe('q10');
  });
});
