import { applyDecisions } from './decisions.js';
import { step } from './step.js';
import type { Decision, EngineDeps, RunState, StepOutcome } from './types.js';

/**
 * Steps a running run until it pauses for approval or ends. `shouldCancel` is asked at every step
 * boundary (the worker reads a cancel flag there).
 */
export async function runUntilPause(
  state: RunState,
  deps: EngineDeps,
  shouldCancel?: (state: RunState) => Promise<boolean> | boolean,
): Promise<Exclude<StepOutcome, { type: 'run_again' }> | { type: 'cancel_requested'; state: RunState }> {
  let current = state;
  for (;;) {
    if (shouldCancel && (await shouldCancel(current))) return { type: 'cancel_requested', state: current };
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
  shouldCancel?: (state: RunState) => Promise<boolean> | boolean,
): ReturnType<typeof runUntilPause> {
  const outcome = await applyDecisions(state, decisions, deps);
  if (outcome.type !== 'run_again') return outcome;
  return runUntilPause(outcome.state, deps, shouldCancel);
}
