/**
 * `budgets.extend`: more budget as a decision (src/loop/budget-extension.ts). What one grant adds to the
 * budget that ran out, how many grants a run may get, how long a card waits, and who may grant more cost.
 */
import { z } from 'zod';
import { type ApproverEntry, type Approvers, approverList, parseApprovers } from '../approvers/approvers.js';
import type { BudgetExtendLimits, ExtendableStop } from '../loop/budget-asks.js';
import type { ConfigProblem } from './errors.js';

const amount = (max: number, what: string) =>
  z
    .number({ error: `expected ${what}` })
    .min(0, { error: 'expected 0 or more' })
    .max(max, { error: `expected at most ${max}` });

const whole = (max: number) => amount(max, 'a whole number').int({ error: 'expected a whole number' });

export const budgetExtendSection = z.strictObject({
  /** Steps one grant adds when the run reached budgets.maxSteps (0: never extended). */
  steps: whole(500).default(0),
  /** Seconds of working time one grant adds when the run used budgets.deadlineSeconds. */
  seconds: whole(86_400).default(0),
  /** Tokens one grant adds when the run used budgets.maxTokens. */
  tokens: whole(100_000_000).default(0),
  /** US dollars one grant adds when the run used budgets.maxCostUsd. */
  costUsd: amount(10_000, 'US dollars').default(0),
  /** Grants one run may get in all. */
  times: whole(20).min(1, { error: 'expected at least 1' }).default(1),
  /** How long a card asking for more waits; then the run ends with its stop reason. */
  expiresAfterMinutes: whole(10_080).min(1, { error: 'expected at least 1' }).default(30),
  /** Who may grant more cost (default approvals.approvers); steps, time and tokens: the requester. */
  approvers: approverList.min(1, { error: 'expected at least one approver (or omit the key)' }).optional(),
});

type BudgetExtendSettings = z.output<typeof budgetExtendSection>;

/** Problems a valid `budgets.extend` can still have against the rest of the policy. */
export function budgetExtendProblems(
  extend: BudgetExtendSettings | undefined,
  approvalsApprovers: readonly ApproverEntry[],
): ConfigProblem[] {
  if (!extend) return [];
  const problems: ConfigProblem[] = [];
  if (extend.steps + extend.seconds + extend.tokens + extend.costUsd === 0) {
    problems.push({
      key: 'budgets.extend',
      problem: 'offers nothing: set steps, seconds, tokens or costUsd above 0',
    });
  }
  if (extend.costUsd > 0 && !extend.approvers && approvalsApprovers.length === 0) {
    problems.push({
      key: 'budgets.extend.approvers',
      problem: 'required: costUsd is offered and approvals.approvers is empty, so nobody could grant it',
    });
  }
  return problems;
}

/** The engine's limits of extensions, fixed on each run when it is created. */
export function extendLimits(extend: BudgetExtendSettings): BudgetExtendLimits {
  return {
    steps: extend.steps,
    deadlineMs: extend.seconds * 1000,
    tokens: extend.tokens,
    costUsd: extend.costUsd,
    times: extend.times,
  };
}

/**
 * Who may answer a budget ask, judged at the click with the policy in force then: the requester for
 * steps, time and tokens (their own question's effort); for cost, `budgets.extend.approvers`, else
 * `approvals.approvers` (money is the approvers' to spend).
 */
export function budgetDeciders(
  extend: BudgetExtendSettings | undefined,
  approvalsApprovers: readonly ApproverEntry[],
  reason: ExtendableStop,
  requester: string,
): Approvers {
  if (reason !== 'cost_budget') return { users: [requester], groups: [] };
  return parseApprovers(extend?.approvers ?? approvalsApprovers);
}

/**
 * The Slack ids a budget card names: the people and groups, and for an on-call source its fallback (who
 * is on call is resolved at the click, src/approvers/resolve.ts).
 */
export function deciderIds(deciders: Approvers): string[] {
  const fallbacks = (deciders.oncall ?? []).flatMap((o) => [...o.fallback.users, ...o.fallback.groups]);
  return [...new Set([...deciders.users, ...deciders.groups, ...fallbacks])];
}
