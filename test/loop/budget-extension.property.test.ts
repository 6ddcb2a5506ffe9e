/**
 * Invariant 4 with extensions: whatever sequence of budget stops and answers (grants, refusals, expiries,
 * repeated answers, answers for another round), what people grant never passes the cap: at most
 * `times` grants, each of exactly the configured amount of the budget that ran out, so the run never
 * takes more than its limits plus `times` grants. Grants are numbered 1, 2, … with no round granted twice.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BudgetDecision } from '../../src/loop/budget-asks.js';
import { budgetLimits, totalGranted } from '../../src/loop/budget-extension.js';
import { type RunOutcome, runUntilPause, settleBudgetAndContinue } from '../../src/loop/run.js';
import { deps, endlessReader, newRun } from '../support/engine.js';

const answer = fc.record({
  kind: fc.constantFrom('granted', 'refused', 'expired'),
  /** 0: this round; otherwise a stale or future round's card. */
  roundOffset: fc.constantFrom(0, 0, 0, -1, 1),
  /** The same answer arrives again (a double click, a redelivered job). */
  repeat: fc.boolean(),
});

const toDecision = (a: { kind: string; roundOffset: number }, round: number): BudgetDecision =>
  a.kind === 'expired'
    ? { round: round + a.roundOffset, kind: 'expired' }
    : { round: round + a.roundOffset, kind: a.kind as 'granted' | 'refused', by: 'UREQ' };

describe('budget extensions (property)', () => {
  it('never grant past the cap, whatever is answered', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 0, max: 3 }),
        fc.array(answer, { maxLength: 12 }),
        async (maxSteps, steps, times, answers) => {
          const model = endlessReader();
          const { deps: d } = deps(model);
          const extend = { steps, deadlineMs: 0, tokens: 0, costUsd: 0, times };
          let outcome: RunOutcome = await runUntilPause(newRun({ maxSteps, extend }), d);
          const queue = [...answers];
          const asked = new Set<number>();
          while (outcome.type === 'budget_ask') {
            const round = outcome.state.budgetAsk?.round ?? 0;
            asked.add(round);
            // Nobody answers any more: the ask expires, as its timer would make it.
            const next = queue.shift() ?? { kind: 'expired', roundOffset: 0, repeat: false };
            const decision = toDecision(next, round);
            outcome = await settleBudgetAndContinue(outcome.state, decision, d);
            if (next.repeat) outcome = await settleBudgetAndContinue(outcome.state, decision, d);
            if (outcome.type === 'budget_ask' && next.roundOffset !== 0 && queue.length === 0) {
              outcome = await settleBudgetAndContinue(outcome.state, { round, kind: 'expired' }, d);
            }
          }
          const state = outcome.state;
          const grants = state.extensions ?? [];
          expect(outcome.type).toBe('final');
          expect(state.stopReason).toBe('max_steps');
          expect(grants.length).toBeLessThanOrEqual(times);
          expect(grants.map((g) => g.round)).toEqual(grants.map((_, i) => i + 1));
          expect(grants.every((g) => g.added.steps === steps)).toBe(true);
          expect(totalGranted(grants).steps).toBeLessThanOrEqual(steps * times);
          expect(state.step).toBe(budgetLimits(state).maxSteps);
          expect(state.step).toBeLessThanOrEqual(maxSteps + steps * times);
          expect(model.calls).toBe(state.step);
          // No ask at all without extensions; at most one ask per grant plus the last one.
          expect(asked.size).toBeLessThanOrEqual(times === 0 ? 0 : grants.length + 1);
        },
      ),
      { numRuns: 150 },
    );
  });
});
