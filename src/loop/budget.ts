import { budgetLimits } from './budget-limits.js';
import type { ModelUsage } from './model-port.js';
import type { ModelPrice, RunLimits } from './run-limits.js';
import type { RunState, Usage } from './run-state.js';
import type { StopReason } from './run-status.js';

export interface Stop {
  reason: StopReason;
  message: string;
}

/** Dollars for `usage`: cached input tokens at the cached rate (the input rate when none is given). */
export function costOf(usage: ModelUsage, price: ModelPrice): number {
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens);
  const fresh = usage.inputTokens - cached;
  const cachedRate = price.cachedInputPerMTok ?? price.inputPerMTok;
  return (
    (fresh * price.inputPerMTok + cached * cachedRate + usage.outputTokens * price.outputPerMTok) / 1_000_000
  );
}

export function priceFor(limits: RunLimits, model: string): ModelPrice {
  return limits.prices[model] ?? limits.defaultPrice;
}

/** Active time used so far: paused time (waiting for a person) does not count against the deadline. */
function activeMs(usage: Usage, now: number): number {
  return usage.activeMs + (usage.activeSince === null ? 0 : Math.max(0, now - usage.activeSince));
}

export function remainingMs(state: RunState, now: number): number {
  return budgetLimits(state).deadlineMs - activeMs(state.usage, now);
}

const fmtUsd = (n: number) => `$${n.toFixed(4)}`;

/** The first budget the run has used up, checked before every model call; null while all hold. */
export function exhaustedBudget(state: RunState, now: number): Stop | null {
  const { usage } = state;
  // Budgets a person extended count with what they added.
  const limits = budgetLimits(state);
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

/** Smallest reply bound worth a model call: a reply cut shorter holds neither a tool call nor an answer. */
export const MIN_REPLY_TOKENS = 16;

/**
 * The output bound of the next request, whose input is estimated at `inputTokens` priced by `price`:
 * the per-reply bound, lowered so input plus the whole reply fit what is left of the token budget and
 * of the cost budget; or the budget that cannot pay for even a minimal reply.
 */
export function planRequest(
  state: RunState,
  inputTokens: number,
  price: ModelPrice,
): { maxOutputTokens: number } | Stop {
  const { usage } = state;
  const limits = budgetLimits(state);
  const tokensLeft = limits.maxTokens - usage.inputTokens - usage.outputTokens - inputTokens;
  if (tokensLeft < MIN_REPLY_TOKENS) {
    return {
      reason: 'token_budget',
      message: `Stopped: the next model request needs about ${inputTokens} input tokens, more than the ${limits.maxTokens}-token budget has left after ${usage.inputTokens + usage.outputTokens} used.`,
    };
  }
  const costLeft = limits.maxCostUsd - usage.costUsd - costOf({ inputTokens, outputTokens: 0 }, price);
  const affordable =
    price.outputPerMTok > 0
      ? Math.floor((costLeft * 1_000_000) / price.outputPerMTok)
      : Number.POSITIVE_INFINITY;
  const maxOutputTokens = Math.min(limits.maxReplyTokens, tokensLeft, affordable);
  if (maxOutputTokens < MIN_REPLY_TOKENS) {
    return {
      reason: 'cost_budget',
      message: `Stopped: the next model request (about ${inputTokens} input tokens) would cost more than the ${fmtUsd(limits.maxCostUsd - usage.costUsd)} left of the ${fmtUsd(limits.maxCostUsd)} budget.`,
    };
  }
  return { maxOutputTokens };
}

/** What a reply is charged: the server's counts, with a missing or zero count replaced by the estimate. */
export function chargedUsage(reported: ModelUsage | undefined, estimate: ModelUsage): ModelUsage {
  const inputTokens = reported && reported.inputTokens > 0 ? reported.inputTokens : estimate.inputTokens;
  // Cached tokens are only believed beside a reported input count (they are a part of it).
  const cached =
    reported && reported.inputTokens > 0 ? Math.min(reported.cachedInputTokens ?? 0, inputTokens) : 0;
  return {
    inputTokens,
    outputTokens: reported && reported.outputTokens > 0 ? reported.outputTokens : estimate.outputTokens,
    ...(cached > 0 ? { cachedInputTokens: cached } : {}),
  };
}

/** The run's usage with `charged` added (cached tokens kept only once some were reported). */
export function addUsage<U extends Usage>(usage: U, charged: ModelUsage, cost: number): U {
  const cached = (usage.cachedInputTokens ?? 0) + (charged.cachedInputTokens ?? 0);
  return {
    ...usage,
    inputTokens: usage.inputTokens + charged.inputTokens,
    outputTokens: usage.outputTokens + charged.outputTokens,
    ...(cached > 0 ? { cachedInputTokens: cached } : {}),
    costUsd: usage.costUsd + cost,
  };
}
