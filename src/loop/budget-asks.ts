/**
 * Budget extensions: a run that used up a budget asks a person for more, and a grant adds to its limits
 * (src/loop/budget-extension.ts).
 */

/** The budgets a person may extend; each is the stop reason of that budget. */
export type ExtendableStop = 'max_steps' | 'deadline' | 'token_budget' | 'cost_budget';

/** An addition to a run's budgets (only the budget that ran out is ever extended by one grant). */
export interface BudgetIncrease {
  steps?: number;
  deadlineMs?: number;
  tokens?: number;
  costUsd?: number;
}

/**
 * What one grant adds to the budget that ran out (0: that budget is never extended) and how many grants a
 * run may get in all, so a run's budgets never pass their limits plus `times` grants.
 */
export interface BudgetExtendLimits {
  steps: number;
  deadlineMs: number;
  tokens: number;
  costUsd: number;
  times: number;
}

/** A run paused at a budget it used up, asking a person for more (src/loop/budget-extension.ts). */
export interface BudgetAsk {
  /** 1 for the first ask of the run, 2 for the next…: the number of the grant it would be. */
  round: number;
  reason: ExtendableStop;
  /** The stop sentence the run ends with if nobody grants more. */
  message: string;
  offer: BudgetIncrease;
  at: number;
}

/** A grant of more budget, recorded on the run. */
export interface BudgetExtension {
  round: number;
  reason: ExtendableStop;
  added: BudgetIncrease;
  /** Slack user id of who granted it. */
  by: string;
  at: number;
}

/** A person's answer to a budget ask of round `round`. */
export type BudgetDecision =
  | { round: number; kind: 'granted'; by: string }
  | { round: number; kind: 'refused'; by: string }
  | { round: number; kind: 'expired' };
