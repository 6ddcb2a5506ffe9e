import type { ModelPrice, ModelUsage, RunLimits, RunState, StopReason, Usage } from './types.js';

export interface Stop {
  reason: StopReason;
  message: string;
}

export function costOf(usage: ModelUsage, price: ModelPrice): number {
  return (usage.inputTokens * price.inputPerMTok + usage.outputTokens * price.outputPerMTok) / 1_000_000;
}

export function priceFor(limits: RunLimits, model: string): ModelPrice {
  return limits.prices[model] ?? limits.defaultPrice;
}

/** Active time used so far: paused time (waiting for a person) does not count against the deadline. */
export function activeMs(usage: Usage, now: number): number {
  return usage.activeMs + (usage.activeSince === null ? 0 : Math.max(0, now - usage.activeSince));
}

export function remainingMs(state: RunState, now: number): number {
  return state.limits.deadlineMs - activeMs(state.usage, now);
}

const fmtUsd = (n: number) => `$${n.toFixed(4)}`;

/** The first budget the run has used up, checked before every model call; null while all hold. */
export function exhaustedBudget(state: RunState, now: number): Stop | null {
  const { limits, usage } = state;
  if (state.step >= limits.maxSteps) {
    return {
      reason: 'max_steps',
      message: `Stopped after ${state.step} steps, the most this run may take.`,
    };
  }
  if (remainingMs(state, now) <= 0) {
    return {
      reason: 'deadline',
      message: `Stopped: the run used its ${Math.round(limits.deadlineMs / 1000)} s of working time.`,
    };
  }
  const tokens = usage.inputTokens + usage.outputTokens;
  if (tokens >= limits.maxTokens) {
    return {
      reason: 'token_budget',
      message: `Stopped: ${tokens} tokens used, the budget is ${limits.maxTokens}.`,
    };
  }
  if (usage.costUsd >= limits.maxCostUsd) {
    return {
      reason: 'cost_budget',
      message: `Stopped: the model cost ${fmtUsd(usage.costUsd)}, the budget is ${fmtUsd(limits.maxCostUsd)}.`,
    };
  }
  return null;
}

/** Tokens the next reply may use: its own bound, lowered so the reply cannot pass the token budget. */
export function replyTokenBound(state: RunState): number {
  const left = state.limits.maxTokens - state.usage.inputTokens - state.usage.outputTokens;
  return Math.max(1, Math.min(state.limits.maxReplyTokens, left));
}
