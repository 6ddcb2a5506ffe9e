import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunState } from '../../src/loop/run-state.js';
import { keysOf, type StoreFixture, storeFixture } from './redis-fixture.js';
import { advance, newState, slack } from './run-state-fixture.js';

let fx: StoreFixture;
beforeEach(() => {
  fx = storeFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

async function runBytes(runId: string): Promise<number> {
  const base = fx.store.context.keys.run(runId).base;
  let total = 0;
  for (const key of await keysOf(fx.redis, fx.prefix)) {
    if (!key.startsWith(base)) continue;
    total += Number(await fx.redis.memory('USAGE', key, 'SAMPLES', 0));
  }
  return total;
}

describe('storage cost', () => {
  it('stores a 200-step run in O(steps) bytes', async () => {
    const runId = 'run-200';
    let state: RunState = newState(runId);
    let { persisted } = (await fx.store.runs.createRun(state, slack)).run;
    const lease = await fx.store.leases.acquire(runId, 'w', 60_000);
    if (!lease.acquired) throw new Error('not acquired');
    const samples = new Map<number, number>();
    for (let step = 1; step <= 200; step++) {
      state = advance(state, 1);
      persisted = (await fx.store.runs.saveStep({ runId, fence: lease.fence, state, persisted })).persisted;
      if (step === 50 || step === 100 || step === 200) samples.set(step, await runBytes(runId));
    }
    const at50 = samples.get(50)!;
    const at100 = samples.get(100)!;
    const at200 = samples.get(200)!;
    // Linear growth: each 50 steps add about the same; a quadratic store would add 2x then 4x.
    const perStepFirst = (at100 - at50) / 50;
    const perStepLater = (at200 - at100) / 100;
    expect(perStepLater / perStepFirst).toBeGreaterThan(0.8);
    expect(perStepLater / perStepFirst).toBeLessThan(1.25);
    // And close to the messages' own size.
    const messageBytes = Buffer.byteLength(JSON.stringify(state.messages));
    expect(at200 / messageBytes).toBeLessThan(1.3);
  });
});
