import type { BudgetDecision } from './budget-asks.js';
import { applyBudgetDecision } from './budget-extension.js';
import { applyDecisions } from './decisions.js';
import { applyChildOutcomes } from './delegate.js';
import type { Decision } from './gated-calls.js';
import type { EngineDeps } from './ports.js';
import type { RunState, StepOutcome } from './run-state.js';
import { step } from './step.js';
import type { ChildOutcome } from './subagents.js';

/** Questions asked at every step boundary. */
export interface Boundary {
  /** Someone asked to cancel the run: stop here. */
  shouldCancel?: (state: RunState) => boolean;
  /** This process is shutting down: leave the run as it is for another worker to continue. */
  shouldYield?: () => boolean;
}

export type RunOutcome =
  | Exclude<StepOutcome, { type: 'run_again' }>
  | { type: 'cancel_requested'; state: RunState }
  | { type: 'yielded'; state: RunState };

/** Steps a running run until it pauses for approval, ends, or a boundary question says stop. */
export async function runUntilPause(
  state: RunState,
  deps: EngineDeps,
  boundary: Boundary = {},
): Promise<RunOutcome> {
  let current = state;
  for (;;) {
    // The signal too: a step whose model request it aborted returns the run unchanged, to stop here.
    if (boundary.shouldCancel?.(current) || deps.cancelSignal?.aborted)
      return { type: 'cancel_requested', state: current };
    if (boundary.shouldYield?.()) return { type: 'yielded', state: current };
    const outcome = await step(current, deps);
    if (outcome.type !== 'run_again') return outcome;
    current = outcome.state;
  }
}

/** Applies decisions, then keeps going when they complete the turn. */
export async function decideAndContinue(
  state: RunState,
  decisions: readonly Decision[],
  deps: EngineDeps,
  boundary: Boundary = {},
): Promise<RunOutcome> {
  const outcome = await applyDecisions(state, decisions, deps);
  if (outcome.type !== 'run_again') return outcome;
  return runUntilPause(outcome.state, deps, boundary);
}

/**
 * Applies what a paused turn waited for (people's decisions, then the ends of its children), then keeps
 * going when they complete the turn.
 */
export async function settleAndContinue(
  state: RunState,
  decisions: readonly Decision[],
  children: readonly ChildOutcome[],
  deps: EngineDeps,
  boundary: Boundary = {},
): Promise<RunOutcome> {
  let outcome: StepOutcome =
    decisions.length > 0
      ? await applyDecisions(state, decisions, deps)
      : { type: 'interruption', state, gated: state.turn?.pending ?? [] };
  if (children.length > 0 && outcome.type === 'interruption') {
    outcome = await applyChildOutcomes(outcome.state, children, deps);
  }
  if (outcome.type !== 'run_again') return outcome;
  return runUntilPause(outcome.state, deps, boundary);
}

/** Applies a person's answer to the run's budget ask, then keeps going when it granted more. */
export async function settleBudgetAndContinue(
  state: RunState,
  decision: BudgetDecision,
  deps: EngineDeps,
  boundary: Boundary = {},
): Promise<RunOutcome> {
  const outcome = applyBudgetDecision(state, decision, deps);
  if (outcome.type === 'budget_ask') return outcome;
  // Saved before the next step, so a crash never forgets the grant or the end.
  if (deps.checkpoint) await deps.checkpoint(outcome.state);
  if (outcome.type !== 'run_again') return outcome;
  return runUntilPause(outcome.state, deps, boundary);
}
