import { describe, expect, it } from 'vitest';
import { applyBudgetDecision, budgetLimits } from '../../src/loop/budget-extension.js';
import { cancelRun } from '../../src/loop/decisions.js';
import { runUntilPause, settleBudgetAndContinue } from '../../src/loop/run.js';
import type { RunLimits } from '../../src/loop/run-limits.js';
import type { RunState } from '../../src/loop/run-state.js';
import { deps, endlessReader, newRun } from '../support/engine.js';

const EXTEND: NonNullable<RunLimits['extend']> = {
  steps: 2,
  deadlineMs: 0,
  tokens: 0,
  costUsd: 0.5,
  times: 2,
};

async function pausedAtSteps(limits: Partial<RunLimits> = { extend: EXTEND }) {
  const model = endlessReader();
  const d = deps(model);
  const out = await runUntilPause(newRun({ maxSteps: 2, ...limits }), d.deps);
  return { model, out, ...d };
}

describe('budget extension in the engine', () => {
  it('without budgets.extend a run stops at its step budget as before', async () => {
    const { out, model } = await pausedAtSteps({});
    expect(out.type).toBe('final');
    expect(out.state.stopReason).toBe('max_steps');
    expect(out.state.budgetAsk).toBeUndefined();
    expect(model.calls).toBe(2);
  });

  it('asks for more steps instead of stopping, its clock paused, nothing more asked of the model', async () => {
    const { out, model, events } = await pausedAtSteps();
    expect(out.type).toBe('budget_ask');
    expect(out.state.status).toBe('awaiting_approval');
    expect(out.state.stopReason).toBeNull();
    expect(out.state.usage.activeSince).toBeNull();
    expect(out.state.budgetAsk).toEqual({
      round: 1,
      reason: 'max_steps',
      message: 'Stopped after 2 steps, the most this run may take.',
      offer: { steps: 2 },
      at: expect.any(Number),
    });
    expect(model.calls).toBe(2);
    expect(events.filter((e) => e.type === 'budget_asked')).toHaveLength(1);
  });

  it('a grant adds the offered steps and the run goes on; at the cap it stops without asking', async () => {
    const { out, model, deps: d } = await pausedAtSteps({ extend: { ...EXTEND, times: 1 } });
    const next = await settleBudgetAndContinue(out.state, { round: 1, kind: 'granted', by: 'UREQ' }, d);
    expect(next.type).toBe('final');
    expect(next.state.stopReason).toBe('max_steps');
    expect(next.state.step).toBe(4);
    expect(model.calls).toBe(4);
    expect(next.state.extensions).toEqual([
      { round: 1, reason: 'max_steps', added: { steps: 2 }, by: 'UREQ', at: expect.any(Number) },
    ]);
    expect(budgetLimits(next.state).maxSteps).toBe(4);
    expect(next.state.limits.maxSteps).toBe(2);
  });

  it('a refusal or an expiry ends the run with the stop it asked about', async () => {
    const { out, deps: d } = await pausedAtSteps();
    const refused = applyBudgetDecision(out.state, { round: 1, kind: 'refused', by: 'UREQ' }, d);
    expect(refused.type).toBe('final');
    expect(refused.state).toMatchObject({ status: 'stopped', stopReason: 'max_steps', budgetAsk: null });
    expect(refused.state.stopMessage).toBe(
      'Stopped after 2 steps, the most this run may take. More budget was refused by <@UREQ>.',
    );
    const expired = applyBudgetDecision(out.state, { round: 1, kind: 'expired' }, d);
    expect(expired.state.stopReason).toBe('max_steps');
    expect(expired.state.stopMessage).toContain('Nobody granted more budget in time.');
  });

  it('an answer for another round, or an answer again after the end, changes nothing', async () => {
    const { out, deps: d } = await pausedAtSteps();
    const stale = applyBudgetDecision(out.state, { round: 2, kind: 'granted', by: 'UREQ' }, d);
    expect(stale).toEqual({ type: 'budget_ask', state: out.state });
    const ended = applyBudgetDecision(out.state, { round: 1, kind: 'refused', by: 'UREQ' }, d);
    const again = applyBudgetDecision(ended.state, { round: 1, kind: 'granted', by: 'UREQ' }, d);
    expect(again).toEqual({ type: 'final', state: ended.state });
  });

  it('a grant stored past the cap ends the run like a refusal', async () => {
    const { out, deps: d } = await pausedAtSteps();
    const capped: RunState = {
      ...out.state,
      limits: { ...out.state.limits, extend: { ...EXTEND, times: 0 } },
    };
    const next = applyBudgetDecision(capped, { round: 1, kind: 'granted', by: 'UREQ' }, d);
    expect(next.type).toBe('final');
    expect(next.state.extensions).toBeUndefined();
    expect(next.state.stopMessage).toContain('No more budget may be granted');
  });

  it('a cost stop offers dollars', async () => {
    const model = endlessReader();
    const d = deps(model);
    const price = { inputPerMTok: 1_000, outputPerMTok: 1_000 };
    const out = await runUntilPause(
      newRun({ maxCostUsd: 0.03, defaultPrice: price, prices: {}, extend: EXTEND }),
      d.deps,
    );
    expect(out.type).toBe('budget_ask');
    expect(out.state.budgetAsk).toMatchObject({ reason: 'cost_budget', offer: { costUsd: 0.5 } });
  });

  it("a sub-agent's run never asks: it stops as before", async () => {
    const model = endlessReader();
    const run = newRun({ maxSteps: 1, extend: EXTEND });
    const child: RunState = {
      ...run,
      agent: { name: 'helper', parentRunId: 'p', parentToolCallId: 'c', depth: 1, lineage: ['helper'] },
    };
    const out = await runUntilPause(child, deps(model).deps);
    expect(out.type).toBe('final');
    expect(out.state.stopReason).toBe('max_steps');
  });

  it('a cancel while asking ends the run and clears the ask', async () => {
    const { out, deps: d } = await pausedAtSteps();
    const cancelled = cancelRun(out.state, d, 'UREQ');
    expect(cancelled).toMatchObject({ status: 'cancelled', stopReason: 'cancelled', budgetAsk: null });
  });
});
