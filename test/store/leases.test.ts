import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type StoreFixture, storeFixture } from './redis-fixture.js';
import { newState, slack } from './run-state-fixture.js';

let fx: StoreFixture;
beforeEach(async () => {
  fx = storeFixture();
  await fx.store.runs.createRun(newState('run-lease'), slack);
});
afterEach(async () => {
  await fx.cleanup();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('run lease', () => {
  it('blocks a second acquirer until the lease expires, then issues a larger fence', async () => {
    // Long enough for the checks below to run before it expires on a loaded machine (a new connection too).
    const ttlMs = 1_000;
    const other = fx.connect();
    const first = await fx.store.leases.acquire('run-lease', 'worker-a', ttlMs);
    expect(first).toMatchObject({ acquired: true, fence: 1 });

    const blocked = await other.leases.acquire('run-lease', 'worker-b', 150);
    expect(blocked.acquired).toBe(false);
    if (!blocked.acquired) {
      expect(blocked.holder).toBe('worker-a');
      expect(blocked.remainingMs).toBeGreaterThan(0);
      expect(blocked.remainingMs).toBeLessThanOrEqual(ttlMs);
    }
    // The same holder name does not re-enter: an earlier attempt of the same job may still be running.
    expect((await fx.store.leases.acquire('run-lease', 'worker-a', 150)).acquired).toBe(false);

    await sleep(ttlMs + 50);
    const second = await other.leases.acquire('run-lease', 'worker-b', 150);
    expect(second).toMatchObject({ acquired: true, fence: 2 });
  });

  it('renews only for the current holder', async () => {
    // Still held when renewed, even on a loaded machine; the renewal sets the TTL checked below.
    const lease = await fx.store.leases.acquire('run-lease', 'worker-a', 1_000);
    if (!lease.acquired) throw new Error('not acquired');
    await fx.store.leases.renew('run-lease', lease.fence, 5000);
    expect(await fx.redis.pttl(fx.store.context.keys.run('run-lease').lease)).toBeGreaterThan(4000);
    await expect(fx.store.leases.renew('run-lease', lease.fence + 7, 5000)).rejects.toMatchObject({
      code: 'stale_fence',
    });
    await fx.store.leases.release('run-lease', lease.fence);
    await expect(fx.store.leases.renew('run-lease', lease.fence, 5000)).rejects.toMatchObject({
      code: 'lease_lost',
    });
  });

  it('releases only for the holder; a released lease can be taken at once with a larger fence', async () => {
    const lease = await fx.store.leases.acquire('run-lease', 'worker-a', 30_000);
    if (!lease.acquired) throw new Error('not acquired');
    expect(await fx.store.leases.release('run-lease', lease.fence + 1)).toBe(false);
    expect((await fx.store.leases.acquire('run-lease', 'worker-b', 30_000)).acquired).toBe(false);
    expect(await fx.store.leases.release('run-lease', lease.fence)).toBe(true);
    expect(await fx.store.leases.acquire('run-lease', 'worker-b', 30_000)).toMatchObject({
      acquired: true,
      fence: lease.fence + 1,
    });
  });

  it('gives exactly one of many concurrent acquirers the lease', async () => {
    const stores = [fx.store, fx.connect(), fx.connect(), fx.connect()];
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (stores[i % 4] ?? fx.store).leases.acquire('run-lease', `w${i}`, 30_000),
      ),
    );
    expect(results.filter((r) => r.acquired)).toHaveLength(1);
  });

  it('gives a resent acquire (same nonce, reply lost) the token it already issued', async () => {
    const keys = fx.store.context.keys.run('run-lease');
    const args = ['worker-a', 30_000, 'nonce-1'];
    const first = (await fx.store.context.script(
      'acquireLease',
      [keys.header, keys.lease],
      args,
    )) as unknown[];
    const resent = (await fx.store.context.script(
      'acquireLease',
      [keys.header, keys.lease],
      args,
    )) as unknown[];
    expect(first[0]).toBe(1);
    expect(resent[0]).toBe(1);
  });

  it('fails not_found for a run that does not exist', async () => {
    await expect(fx.store.leases.acquire('ghost', 'worker-a', 1000)).rejects.toMatchObject({
      code: 'not_found',
    });
  });
});
