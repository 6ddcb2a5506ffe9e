/**
 * More budget as a decision: when a run uses up its steps, working time, tokens or cost and its limits
 * allow extensions, it pauses (like an approval: nothing held but the stored state) and asks a person for
 * one more grant of that budget. Only the engine asks, at its own budget checks: the model never sees
 * this and can neither trigger nor grant it. A grant adds a fixed amount (limits.extend) and a run gets at
 * most `limits.extend.times` grants, so what it may spend stays bounded whatever is clicked.
 */
import type { Stop } from './budget.js';
import type {
  BudgetAsk,
  BudgetDecision,
  BudgetExtension,
  BudgetIncrease,
  ExtendableStop,
} from './budget-asks.js';
import { budgetLimits, totalGranted } from './budget-limits.js';
import { RunStatusError } from './errors.js';
import { endRun, pauseClock } from './finish.js';
import type { EngineDeps } from './ports.js';
import { NOT_ENDED, type RunState, type StepOutcome } from './run-state.js';
import type { StopReason } from './run-status.js';
import { isFinished } from './state.js';

const EXTENDABLE: ReadonlySet<StopReason> = new Set(['max_steps', 'deadline', 'token_budget', 'cost_budget']);

const isExtendable = (reason: StopReason): reason is ExtendableStop => EXTENDABLE.has(reason);

/**
 * What one grant would add for a run stopped by `reason`, or null when it may not ask: no extensions in
 * its limits, all its grants used, none of that budget offered, or a sub-agent's run (its parent's
 * budget is its ceiling, and nobody watches its thread).
 */
function offerFor(state: RunState, reason: StopReason): BudgetIncrease | null {
  const extend = state.limits.extend;
  if (!extend || state.agent || !isExtendable(reason)) return null;
  if ((state.extensions ?? []).length >= extend.times) return null;
  const offer: Record<ExtendableStop, BudgetIncrease> = {
    max_steps: { steps: extend.steps },
    deadline: { deadlineMs: extend.deadlineMs },
    token_budget: { tokens: extend.tokens },
    cost_budget: { costUsd: extend.costUsd },
  };
  const amount = Object.values(offer[reason])[0] ?? 0;
  return amount > 0 ? offer[reason] : null;
}

/**
 * A budget stop: pauses the run with a budget ask when it may ask for more, else ends it with `stop`.
 * The paused run holds nothing but its stored state; its clock is stopped while it waits.
 */
export function askOrEnd(
  state: RunState,
  stop: Stop,
  deps: Pick<EngineDeps, 'clock' | 'emit'>,
): Extract<StepOutcome, { type: 'budget_ask' | 'final' }> {
  const offer = offerFor(state, stop.reason);
  if (!offer || !isExtendable(stop.reason)) return { type: 'final', state: endRun(state, stop, deps) };
  const now = deps.clock.now();
  const ask: BudgetAsk = {
    round: (state.extensions ?? []).length + 1,
    reason: stop.reason,
    message: stop.message,
    offer,
    at: now,
  };
  deps.emit({ type: 'budget_asked', runId: state.runId, ask });
  return {
    type: 'budget_ask',
    state: {
      ...pauseClock(state, now),
      status: 'awaiting_approval',
      ...NOT_ENDED,
      budgetAsk: ask,
      updatedAt: now,
    },
  };
}

/**
 * Applies a person's answer to the run's budget ask: a grant adds the offer and the run goes on (its
 * clock running again); a refusal or an expiry ends it with the stop it was asked about. An answer that
 * comes again, or for another round than the one asked, changes nothing: the run is returned as it is
 * (ended, or still waiting). Throws for a run that is working and asks nothing.
 */
export function applyBudgetDecision(
  state: RunState,
  decision: BudgetDecision,
  deps: Pick<EngineDeps, 'clock' | 'emit'>,
): StepOutcome {
  const ask = state.budgetAsk;
  if (isFinished(state)) return { type: 'final', state };
  if (!ask) throw new RunStatusError(state.status, 'answer a budget ask of');
  if (ask.round !== decision.round) return { type: 'budget_ask', state };
  const now = deps.clock.now();
  const waiting: RunState = { ...state, budgetAsk: null };
  const granted = state.extensions ?? [];
  // The cap holds here too, whatever was stored: a grant past it ends the run like a refusal.
  if (decision.kind === 'granted' && granted.length < (state.limits.extend?.times ?? 0)) {
    const extension: BudgetExtension = {
      round: ask.round,
      reason: ask.reason,
      added: ask.offer,
      by: decision.by,
      at: now,
    };
    deps.emit({ type: 'budget_extended', runId: state.runId, extension });
    const usage = { ...state.usage, activeSince: now };
    return {
      type: 'run_again',
      state: {
        ...waiting,
        status: 'running',
        ...NOT_ENDED,
        usage,
        extensions: granted.concat(extension),
        updatedAt: now,
      },
    };
  }
  const why =
    decision.kind === 'refused'
      ? `More budget was refused by <@${decision.by}>.`
      : decision.kind === 'expired'
        ? 'Nobody granted more budget in time.'
        : 'No more budget may be granted to this run.';
  return {
    type: 'final',
    state: endRun(waiting, { reason: ask.reason, message: `${ask.message} ${why}` }, deps),
  };
}

/** "10 more steps", "$1.00 more", for the card and the trace. */
export function increaseText(increase: BudgetIncrease): string {
  const parts: string[] = [];
  if (increase.steps) parts.push(`${increase.steps} more step${increase.steps === 1 ? '' : 's'}`);
  if (increase.deadlineMs) parts.push(`${Math.round(increase.deadlineMs / 1000)} s more working time`);
  if (increase.tokens) parts.push(`${increase.tokens} more tokens`);
  if (increase.costUsd) parts.push(`$${increase.costUsd.toFixed(2)} more`);
  return parts.join(', ');
}

export { budgetLimits, totalGranted };
