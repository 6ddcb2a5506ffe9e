/** Feedback on answers in the store (real Redis): once per person and run, comments, listing by time. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/store/index.js';
import { type StoreFixture, storeFixture } from './redis-fixture.js';
import { realisticState, slack } from './run-state-fixture.js';

let fx: StoreFixture;
const DAY = 86_400_000;
beforeAll(async () => {
  fx = storeFixture({ retentionMs: 2 * DAY, maxRunLifetimeMs: 10 * DAY });
  for (const runId of ['run-a', 'run-b']) await fx.store.runs.createRun(realisticState(runId), slack);
});
afterAll(async () => {
  await fx?.cleanup();
});

describe('feedback store', () => {
  it("records a person's first click on a run; later clicks change nothing and return the first", async () => {
    const first = await fx.store.feedback.record({
      runId: 'run-a',
      userId: 'U1',
      value: 'bad',
      at: 1_000,
      channelId: 'C0OPS',
    });
    expect(first).toEqual({
      recorded: true,
      record: { runId: 'run-a', userId: 'U1', value: 'bad', at: 1_000, channelId: 'C0OPS' },
    });
    const again = await fx.store.feedback.record({ runId: 'run-a', userId: 'U1', value: 'good', at: 2_000 });
    expect(again).toEqual({ recorded: false, record: first.record });
    expect(await fx.redis.zcard(fx.store.context.keys.feedbackIndex)).toBe(1);
  });

  it('keeps a comment with the click (replacing an earlier one), only for someone who clicked', async () => {
    await fx.store.feedback.comment('run-a', 'U1', 'first try', 3_000);
    const updated = await fx.store.feedback.comment('run-a', 'U1', '  wrong service  ', 4_000);
    expect(updated).toMatchObject({ value: 'bad', at: 1_000, comment: 'wrong service', commentedAt: 4_000 });
    await expect(fx.store.feedback.comment('run-a', 'U2', 'hi', 5_000)).rejects.toMatchObject({
      code: 'no_feedback',
    });
    await expect(fx.store.feedback.comment('run-gone', 'U1', 'hi', 5_000)).rejects.toBeInstanceOf(StoreError);
  });

  it('refuses feedback on a run that is gone', async () => {
    await expect(
      fx.store.feedback.record({ runId: 'run-gone', userId: 'U1', value: 'good', at: 1 }),
    ).rejects.toMatchObject({ code: 'not_found' });
  });

  it('lists by time of the click, per run and across runs; a run that is gone drops out', async () => {
    await fx.store.feedback.record({ runId: 'run-a', userId: 'U2', value: 'good', at: 5_000 });
    await fx.store.feedback.record({ runId: 'run-b', userId: 'U1', value: 'good', at: 7_000 });
    expect((await fx.store.feedback.forRun('run-a')).map((r) => r.userId)).toEqual(['U1', 'U2']);
    expect((await fx.store.feedback.since(0)).map((r) => `${r.runId}/${r.userId}`)).toEqual([
      'run-a/U1',
      'run-a/U2',
      'run-b/U1',
    ]);
    expect((await fx.store.feedback.since(4_000, 6_000)).map((r) => r.userId)).toEqual(['U2']);
    await fx.redis.del(fx.store.context.keys.run('run-b').feedback);
    expect(await fx.store.feedback.since(6_000)).toEqual([]);
  });

  it("lives as long as its run: the feedback hash takes the run's TTL, and the retention when it ends", async () => {
    const ttl = await fx.redis.pttl(fx.store.context.keys.run('run-a').feedback);
    expect(ttl).toBeGreaterThan(9 * DAY);
    await fx.store.runs.expireRun('run-a');
    const after = await fx.redis.pttl(fx.store.context.keys.run('run-a').feedback);
    expect(after).toBeGreaterThan(DAY);
    expect(after).toBeLessThanOrEqual(2 * DAY);
  });
});
