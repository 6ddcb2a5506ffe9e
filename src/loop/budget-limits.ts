/** A run's budgets with what people granted it (src/loop/budget-extension.ts). */
import type { BudgetExtension, BudgetIncrease } from './budget-asks.js';
import type { RunLimits } from './run-limits.js';
import type { RunState } from './run-state.js';

/** The run's limits with every grant added: what the budget checks hold the run to. */
export function budgetLimits(state: Pick<RunState, 'limits' | 'extensions'>): RunLimits {
  const grants = state.extensions ?? [];
  if (grants.length === 0) return state.limits;
  const total = totalGranted(grants);
  const { limits } = state;
  return {
    ...limits,
    maxSteps: limits.maxSteps + (total.steps ?? 0),
    deadlineMs: limits.deadlineMs + (total.deadlineMs ?? 0),
    maxTokens: limits.maxTokens + (total.tokens ?? 0),
    maxCostUsd: limits.maxCostUsd + (total.costUsd ?? 0),
  };
}

/** The sum of what `grants` added, budget by budget. */
export function totalGranted(grants: readonly BudgetExtension[]): Required<BudgetIncrease> {
  const total = { steps: 0, deadlineMs: 0, tokens: 0, costUsd: 0 };
  for (const { added } of grants) {
    total.steps += added.steps ?? 0;
    total.deadlineMs += added.deadlineMs ?? 0;
    total.tokens += added.tokens ?? 0;
    total.costUsd += added.costUsd ?? 0;
  }
  return total;
}
