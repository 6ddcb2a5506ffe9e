/**
 * What the policy says about one gated call: allowed by a rule, denied by a rule, or asked of people
 * (whom, how many, for how long, with which reminders, escalation and grant). Pure: the worker records
 * the outcome (src/worker/pause.ts), the bot checks clicks against it, and `loopgate policy test` prints
 * it with the reasons. Policy never runs anything by itself: an allowed call goes through the same
 * approval record and execution ledger as a clicked one.
 */
import type { Policy } from '../config/policy.js';
import { type Approvers, approversFor } from '../config/policy-limits.js';
import { conditionHolds, conditionMiss, valueAt } from './conditions.js';
import type { GrantSpec, Rule } from './rules.js';

/** The rule that decided, as people read it. */
export interface RuleRef {
  /** 0-based position in `rules.<tool>`. */
  index: number;
  name?: string;
  /** `rule 2 of run_action (prod restarts)`. */
  label: string;
}

export interface AskDecision {
  kind: 'ask';
  /** null: no rule matched, the tool's default applies. */
  rule: RuleRef | null;
  approvers: Approvers;
  quorum: number;
  selfApproval: boolean;
  expiresAfterMs: number;
  remindAtPercent: readonly number[];
  escalation: { to: Approvers; afterMs: number } | null;
  grant: GrantSpec | null;
}

export type GateDecision =
  | { kind: 'allow'; rule: RuleRef }
  | { kind: 'deny'; rule: RuleRef; reason: string }
  | AskDecision;

export function ruleLabel(tool: string, index: number, name?: string): string {
  return `rule ${index + 1} of ${tool}${name ? ` (${name})` : ''}`;
}

const ruleRef = (tool: string, index: number, rule: Rule): RuleRef => ({
  index,
  ...(rule.name ? { name: rule.name } : {}),
  label: ruleLabel(tool, index, rule.name),
});

/** Whether every condition of `rule` holds for `args`. */
export function ruleMatches(rule: Rule, args: unknown): boolean {
  for (const { parts, condition } of rule.conditions) {
    if (!conditionHolds(condition, valueAt(args, parts))) return false;
  }
  return true;
}

/** Index of the first rule that matches (first match wins), or -1. */
export function firstMatch(rules: readonly Rule[], args: unknown): number {
  for (let i = 0; i < rules.length; i++) {
    if (ruleMatches(rules[i] as Rule, args)) return i;
  }
  return -1;
}

/** The rules written for `tool` (own keys only: a tool named `constructor` has none). */
export function rulesFor(policy: Pick<Policy, 'rules'>, tool: string): readonly Rule[] {
  return Object.hasOwn(policy.rules, tool) ? (policy.rules[tool] ?? []) : [];
}

const split = (ids: readonly string[]): Approvers => ({
  users: ids.filter((id) => !id.startsWith('S')),
  groups: ids.filter((id) => id.startsWith('S')),
});

/** The ask of a call no rule decides: the tool's approvers, one of them, the approvals.* defaults. */
export function defaultAsk(policy: Policy, tool: string): AskDecision {
  return askOf(policy, tool, null, undefined);
}

function askOf(policy: Policy, tool: string, ref: RuleRef | null, rule: Rule | undefined): AskDecision {
  const a = policy.approvals;
  const escalateTo = rule?.escalateTo ?? a.escalateTo;
  const escalateAfter = rule?.escalateAfterMinutes ?? a.escalateAfterMinutes;
  return {
    kind: 'ask',
    rule: ref,
    approvers: rule?.approvers ? split(rule.approvers) : approversFor(policy, tool),
    quorum: rule?.quorum ?? 1,
    selfApproval: rule?.selfApproval ?? a.selfApproval,
    expiresAfterMs: (rule?.expiresAfterMinutes ?? a.expiresAfterMinutes) * 60_000,
    remindAtPercent: rule?.remindAtPercent ?? a.remindAtPercent,
    escalation:
      escalateTo && escalateAfter !== undefined
        ? { to: split(escalateTo), afterMs: escalateAfter * 60_000 }
        : null,
    grant: rule?.grant ?? null,
  };
}

/** What the policy decides for a call of `tool` with (validated) `args`. */
export function decideGate(policy: Policy, tool: string, args: unknown): GateDecision {
  const rules = rulesFor(policy, tool);
  const index = firstMatch(rules, args);
  const rule = rules[index];
  if (!rule) return defaultAsk(policy, tool);
  const ref = ruleRef(tool, index, rule);
  if (rule.outcome === 'allow') return { kind: 'allow', rule: ref };
  if (rule.outcome === 'deny') return { kind: 'deny', rule: ref, reason: rule.reason ?? 'denied by policy' };
  return askOf(policy, tool, ref, rule);
}

/** One rule's verdict in an explanation: matched, or the first condition that failed and why. */
export interface RuleVerdict {
  index: number;
  label: string;
  matched: boolean;
  /** Why it did not match: `params.env is "prod", expected "staging"`. */
  miss?: string;
}

/** Every rule tried, in order, up to and including the one that decided; and the decision. */
export function explainGate(
  policy: Policy,
  tool: string,
  args: unknown,
): { tried: RuleVerdict[]; decision: GateDecision } {
  const tried: RuleVerdict[] = [];
  for (const [index, rule] of rulesFor(policy, tool).entries()) {
    const label = ruleLabel(tool, index, rule.name);
    let miss: string | undefined;
    for (const { path, condition } of rule.conditions) {
      const why = conditionMiss(condition, valueAt(args, path));
      if (why !== null) {
        miss = `${path} ${why}`;
        break;
      }
    }
    tried.push({ index, label, matched: miss === undefined, ...(miss ? { miss } : {}) });
    if (miss === undefined) break;
  }
  return { tried, decision: decideGate(policy, tool, args) };
}
