/**
 * Budget asks on real Redis (createBudgetAsk-2, decideBudgetAsk-1): whatever answers arrive at once, from
 * several connections (double clicks, two deciders, the expiry timer racing a click), exactly one of them
 * decides the round and is audited; a card of another round and an answer after the expiry change
 * nothing but what they must; writing the ask again keeps its answer, a later round replaces it.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BudgetAsk } from '../../src/loop/budget-asks.js';
import { StoreError } from '../../src/store/index.js';
import { type StoreFixture, storeFixture } from './redis-fixture.js';
import { realisticState, slack, T0 } from './run-state-fixture.js';

const ask = (round: number): BudgetAsk => ({
  round,
  reason: 'cost_budget',
  message: 'Stopped: the model cost $0.5000, the budget is $0.5000.',
  offer: { costUsd: 1 },
  at: T0,
});
const EXPIRES = T0 + 60_000;

let fx: StoreFixture;
beforeAll(() => {
  fx = storeFixture();
});
afterAll(async () => {
  await fx.cleanup();
});

const budgetEntries = async (runId: string) =>
  (await fx.store.audit.recent(1_000)).filter(
    (e) => e.entry.runId === runId && e.entry.event === 'budget_extension',
  );

describe('budget asks in Redis', () => {
  it('many answers at once: exactly one decides, and only it is audited', async () => {
    let n = 0;
    const stores = [fx.store, fx.connect(), fx.connect()];
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            decision: fc.constantFrom('granted', 'refused', 'expired', 'cancelled'),
            by: fc.constantFrom('U0A', 'U0B'),
            late: fc.boolean(),
          }),
          { minLength: 1, maxLength: 8 },
        ),
        async (answers) => {
          const runId = `run-budget-${n++}`;
          await fx.store.runs.createRun(realisticState(runId), slack);
          expect(await fx.store.budgetAsks.create(runId, ask(1), 'U0REQ', EXPIRES)).toMatchObject({
            status: 'pending',
            round: 1,
          });
          const results = await Promise.all(
            answers.map((a, i) =>
              stores[i % stores.length]!.budgetAsks.decide({
                runId,
                round: 1,
                decision: a.decision as 'granted',
                by: a.by,
                now: a.late ? EXPIRES : T0 + 1,
              }),
            ),
          );
          const changed = results.filter((r) => r.outcome !== 'unchanged');
          expect(changed).toHaveLength(1);
          const stored = await fx.store.budgetAsks.get(runId);
          expect(stored?.status).toBe(changed[0]!.record.status);
          expect(await budgetEntries(runId)).toHaveLength(1);
          // The ask written again (a recovered job) keeps its answer.
          expect((await fx.store.budgetAsks.create(runId, ask(1), 'U0REQ', EXPIRES))?.status).toBe(
            stored?.status,
          );
        },
      ),
      { numRuns: 25 },
    );
  });

  it('a late grant expires the ask; a card of another round is refused; a later round replaces the record', async () => {
    const runId = 'run-budget-rounds';
    await fx.store.runs.createRun(realisticState(runId), slack);
    await fx.store.budgetAsks.create(runId, ask(1), 'U0REQ', EXPIRES);
    const late = await fx.store.budgetAsks.decide({
      runId,
      round: 1,
      decision: 'granted',
      by: 'U0A',
      now: EXPIRES,
    });
    expect(late).toMatchObject({ outcome: 'late', record: { status: 'expired' } });
    await expect(
      fx.store.budgetAsks.decide({ runId, round: 2, decision: 'granted', by: 'U0A', now: T0 }),
    ).rejects.toMatchObject({ code: 'stale_round' });
    const second = await fx.store.budgetAsks.create(runId, ask(2), 'U0REQ', EXPIRES + 60_000);
    expect(second).toMatchObject({ round: 2, status: 'pending' });
    expect(second?.decidedBy).toBeUndefined();
    await expect(
      fx.store.budgetAsks.decide({ runId, round: 1, decision: 'granted', by: 'U0A', now: T0 }),
    ).rejects.toBeInstanceOf(StoreError);
  });

  it('no run, no ask', async () => {
    expect(await fx.store.budgetAsks.create('run-budget-none', ask(1), 'U0REQ', EXPIRES)).toBeNull();
    expect(await fx.store.budgetAsks.get('run-budget-none')).toBeNull();
  });
});
