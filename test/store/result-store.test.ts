import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resultHandle } from '../../src/loop/large-results.js';
import type { RunState } from '../../src/loop/run-state.js';
import { runResultStore } from '../../src/store/index.js';
import { type StoreFixture, storeFixture } from './redis-fixture.js';
import { advance, newState, slack } from './run-state-fixture.js';

const DAY = 86_400_000;
const RUN = 'run-results';
const h = (call: string) => resultHandle(RUN, call);
let fx: StoreFixture;

beforeEach(() => {
  fx = storeFixture({ retentionMs: 2 * DAY, maxRunLifetimeMs: 10 * DAY });
});
afterEach(async () => {
  await fx.cleanup();
});

async function started(): Promise<number> {
  await fx.store.runs.createRun(newState(RUN), slack);
  const lease = await fx.store.leases.acquire(RUN, 'w', 30_000);
  if (!lease.acquired) throw new Error('not acquired');
  return lease.fence;
}

describe('kept results (read_result)', () => {
  it('keeps texts under their handles and reads them back; an unknown handle reads null', async () => {
    const fence = await started();
    const port = runResultStore(fx.store.results, RUN, fence);
    const text = `${'é'.repeat(1_000)}\nline two`;
    expect(await port.keep(h('c1'), text, 1_000_000)).toEqual({ kept: true });
    expect(await port.read(h('c1'))).toBe(text);
    expect(await port.read(h('c2'))).toBeNull();
    expect(await port.read('#bytes')).toBeNull();
  });

  it('bounds the bytes of a run: a text that would pass the bound is refused and nothing is written', async () => {
    const fence = await started();
    const port = runResultStore(fx.store.results, RUN, fence);
    expect(await port.keep(h('c1'), 'a'.repeat(600), 1_000)).toEqual({ kept: true });
    // 'é' is two bytes: 250 of them are 500 bytes, and 600 + 500 > 1000.
    expect(await port.keep(h('c2'), 'é'.repeat(250), 1_000)).toEqual({
      kept: false,
      reason: "this run's kept results would pass 1000 bytes",
    });
    expect(await port.read(h('c2'))).toBeNull();
    // The same call kept again (a retry or a recovered job) replaces its text: it does not count twice.
    expect(await port.keep(h('c1'), 'b'.repeat(900), 1_000)).toEqual({ kept: true });
    expect(await port.read(h('c1'))).toBe('b'.repeat(900));
    expect(await port.keep(h('c3'), 'c'.repeat(100), 1_000)).toEqual({ kept: true });
    expect(await port.keep(h('c4'), 'd', 1_000)).toMatchObject({ kept: false });
  });

  it('refuses a writer without the lease, and a run that does not exist', async () => {
    const fence = await started();
    await expect(
      fx.store.results.keep({ runId: RUN, fence: fence + 1, handle: h('c1'), text: 'x', maxRunBytes: 100 }),
    ).rejects.toMatchObject({
      code: 'stale_fence',
    });
    await expect(
      fx.store.results.keep({
        runId: 'ghost',
        fence,
        handle: resultHandle('ghost', 'c1'),
        text: 'x',
        maxRunBytes: 100,
      }),
    ).rejects.toMatchObject({
      code: 'not_found',
    });
    expect(await fx.store.results.read(RUN, h('c1'))).toBeNull();
  });

  it('expire with the run: the lifetime TTL while it runs, the retention once it finishes', async () => {
    const fence = await started();
    await runResultStore(fx.store.results, RUN, fence).keep(h('c1'), 'long text', 1_000);
    const key = fx.store.context.keys.run(RUN).results;
    expect(await fx.redis.pttl(key)).toBeGreaterThan(9 * DAY);
    const finished: RunState = {
      ...advance(newState(RUN), 1),
      status: 'completed',
      stopReason: 'completed',
      stopMessage: 'Completed.',
      answer: ['ok'],
    };
    await fx.store.runs.saveStep({
      runId: RUN,
      fence,
      state: finished,
      persisted: { messages: 2, evidence: 0 },
    });
    const ttl = await fx.redis.pttl(key);
    expect(ttl).toBeGreaterThan(2 * DAY - 60_000);
    expect(ttl).toBeLessThanOrEqual(2 * DAY);
  });
});
