/** Notices workers leave for the bot's /readyz (real Redis): repeated, withdrawn, and aged out. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTICE_MAX_AGE_MS } from '../../src/store/worker-notices.js';
import { type StoreFixture, storeFixture } from './redis-fixture.js';

let fx: StoreFixture;
beforeAll(() => {
  fx = storeFixture();
});
afterAll(async () => {
  await fx?.cleanup();
});

describe('worker notices: workers serving no metrics', () => {
  it('lists each worker once however often it repeats, leaves out one silent for too long, and forgets a withdrawn one', async () => {
    const notices = fx.store.workerNotices;
    const t0 = 1_000_000_000;
    const a = { host: 'h1', pid: 11, port: 9091 };
    const b = { host: 'h1', pid: 12, port: 9091 };
    await notices.noMetrics(a, t0);
    await notices.noMetrics(b, t0);
    await notices.noMetrics(a, t0 + 30_000);
    expect(await notices.withoutMetrics(t0 + 31_000)).toEqual([
      { ...b, seenAt: new Date(t0).toISOString() },
      { ...a, seenAt: new Date(t0 + 30_000).toISOString() },
    ]);
    // b died without withdrawing: past the age limit it is no longer listed, a (repeating) still is.
    expect(await notices.withoutMetrics(t0 + NOTICE_MAX_AGE_MS + 1)).toEqual([
      { ...a, seenAt: new Date(t0 + 30_000).toISOString() },
    ]);
    await notices.withdraw(a);
    expect(await notices.withoutMetrics(t0 + 31_000)).toEqual([{ ...b, seenAt: new Date(t0).toISOString() }]);
  });

  it('leaves out a member it cannot read rather than failing the probe', async () => {
    const key = fx.store.context.keys.workersWithoutMetrics;
    const now = Date.now();
    await fx.store.context.redis.zadd(key, now, 'not json', now, '{"host":1}');
    await fx.store.workerNotices.noMetrics({ host: 'h2', pid: 7, port: 9092 }, now);
    expect(await fx.store.workerNotices.withoutMetrics(now)).toEqual([
      { host: 'h2', pid: 7, port: 9092, seenAt: new Date(now).toISOString() },
    ]);
  });
});
