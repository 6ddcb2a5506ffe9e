import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { modelView } from '../../src/loop/context.js';
import type { CompactionRecord } from '../../src/loop/context-window.js';
import type { RunState } from '../../src/loop/run-state.js';
import { RunCheckpointer } from '../../src/store/index.js';
import { type StoreFixture, storeFixture } from './redis-fixture.js';
import { advance, newState, slack } from './run-state-fixture.js';

const DAY = 86_400_000;
const RUN = 'run-compacted';
let fx: StoreFixture;

beforeEach(() => {
  fx = storeFixture({ retentionMs: 2 * DAY });
});
afterEach(async () => {
  await fx.cleanup();
});

const compaction = (state: RunState, upTo: number, summary: string): CompactionRecord => ({
  upTo,
  messages: state.messages.length,
  summary,
  notes: 'Recorded by loopgate (its records, not my words):\nNo call that needs approval was made so far.',
  step: state.step,
  at: state.updatedAt,
  tokensBefore: 5_000,
  tokensAfter: 1_200,
  calls: 1,
  usage: { inputTokens: 4_000, outputTokens: 150 },
  costUsd: 0.002,
  model: 'gpt-4.1-mini',
});

async function started(): Promise<{ fence: number; state: RunState; checkpointer: RunCheckpointer }> {
  const state = newState(RUN);
  const { persisted } = (await fx.store.runs.createRun(state, slack)).run;
  const lease = await fx.store.leases.acquire(RUN, 'w', 30_000);
  if (!lease.acquired) throw new Error('not acquired');
  return {
    fence: lease.fence,
    state,
    checkpointer: new RunCheckpointer(fx.store.runs, RUN, lease.fence, persisted),
  };
}

describe('compactions in the run store', () => {
  it('appends each compaction record once, and a loaded run gives the model the same view', async () => {
    const { state, checkpointer } = await started();
    let next = advance(state, 6);
    await checkpointer.checkpoint(next);
    const first = compaction(next, 6, 'I checked svc-1 to svc-2.');
    next = { ...advance({ ...next, compactions: [first] }, 4) };
    await checkpointer.checkpoint(next);
    expect(checkpointer.persisted).toEqual({ messages: next.messages.length, evidence: 0, compactions: 1 });
    const second = compaction(next, 12, 'I checked svc-1 to svc-5.');
    next = { ...advance({ ...next, compactions: [first, second] }, 1) };
    await checkpointer.checkpoint(next);

    const loaded = await fx.store.runs.loadRun(RUN);
    expect(loaded?.state.compactions).toEqual([first, second]);
    expect(loaded?.persisted).toEqual({ messages: next.messages.length, evidence: 0, compactions: 2 });
    expect(modelView(loaded!.state)).toEqual(modelView(next));
    expect(modelView(loaded!.state)[2]?.content).toContain('I checked svc-1 to svc-5.');
    const keys = fx.store.context.keys.run(RUN);
    expect(await fx.redis.llen(keys.compactions)).toBe(2);
  });

  it('loads a run without compactions as before (no field, no list)', async () => {
    const { state, checkpointer } = await started();
    await checkpointer.checkpoint(advance(state, 2));
    const loaded = await fx.store.runs.loadRun(RUN);
    expect(loaded?.state.compactions).toBeUndefined();
    expect(loaded?.persisted).toEqual({ messages: 6, evidence: 0 });
  });

  it('refuses a stale view of the compactions and a state that lost one', async () => {
    const { state, fence } = await started();
    const next = advance(state, 6);
    const withOne: RunState = { ...next, compactions: [compaction(next, 6, 'one')] };
    const saved = await fx.store.runs.saveStep({
      runId: RUN,
      fence,
      state: withOne,
      persisted: { messages: 2, evidence: 0 },
    });
    await expect(
      fx.store.runs.saveStep({
        runId: RUN,
        fence,
        state: advance(withOne, 1),
        persisted: { messages: saved.persisted.messages, evidence: 0 },
      }),
    ).rejects.toMatchObject({ code: 'count_mismatch' });
    await expect(
      fx.store.runs.saveStep({ runId: RUN, fence, state: advance(next, 1), persisted: saved.persisted }),
    ).rejects.toMatchObject({ code: 'not_append_only' });
  });

  it('expires the compactions with the run', async () => {
    const { state, fence } = await started();
    const next = advance(state, 6);
    const finished: RunState = {
      ...next,
      compactions: [compaction(next, 6, 'one')],
      status: 'completed',
      stopReason: 'completed',
      stopMessage: 'Completed.',
      answer: ['done'],
    };
    await fx.store.runs.saveStep({
      runId: RUN,
      fence,
      state: finished,
      persisted: { messages: 2, evidence: 0 },
    });
    const ttl = await fx.redis.pttl(fx.store.context.keys.run(RUN).compactions);
    expect(ttl).toBeGreaterThan(2 * DAY - 60_000);
    expect(ttl).toBeLessThanOrEqual(2 * DAY);
  });

  it('refuses to create a run that already has compactions', async () => {
    const state = newState(RUN);
    await expect(
      fx.store.runs.createRun({ ...state, compactions: [compaction(state, 1, 'x')] }, slack),
    ).rejects.toThrow(/a new run has no compactions/);
  });
});
