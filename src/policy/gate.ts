/**
 * What the policy says about one gated call: allowed by a rule, denied by a rule, or asked of people
 * (whom, how many, for how long, with which reminders, escalation and grant). Pure: the worker records
 * the outcome (src/worker/pause.ts), the bot checks clicks against it, and `loopgate policy test` prints
 * it with the reasons. Policy never runs anything by itself: an allowed call goes through the same
 * approval record and execution ledger as a clicked one.
 */

import { type Approvers, parseApprovers } from '../approvers/approvers.js';
import type { Policy } from '../config/policy.js';
import { approversFor } from '../config/policy-limits.js';
import { conditionMiss, conditionVerdict, type Verdict, valuesAt } from './conditions.js';
import { freezeMiss, freezeVerdict } from './freeze-condition.js';
import { activeFreezes, type FreezeState } from './freezes.js';
import type { GrantSpec, Rule } from './rules.js';

/** The rule that decided, as people read it. */
interface RuleRef {
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
  /** A deny rule of this tool allows break glass: the card offers it (src/policy/break-glass.ts). */
  breakGlassOffered?: true;
  /** The channel rule whose approvers replaced the rule's (src/policy/channel-rules.ts): recorded, shown. */
  approversFrom?: string;
}

export type GateDecision =
  | { kind: 'allow'; rule: RuleRef }
  | {
      kind: 'deny';
      rule: RuleRef;
      reason: string;
      /** The rule lets these people override it for one call (src/policy/break-glass.ts). */
      breakGlass?: { approvers: Approvers; auditChannel?: string };
    }
  | AskDecision;

export function ruleLabel(tool: string, index: number, name?: string): string {
  return `rule ${index + 1} of ${tool}${name ? ` (${name})` : ''}`;
}

const ruleRef = (tool: string, index: number, rule: Rule): RuleRef => ({
  index,
  ...(rule.name ? { name: rule.name } : {}),
  label: ruleLabel(tool, index, rule.name),
});

/**
 * One condition of `rule` on `args`. A path reaching several values (a list) is read in the stricter
 * direction: for a deny or ask rule it holds when some element holds, for an allow rule only when every
 * element holds (and there is one); an undecidable element makes it `unknown` unless that settles it.
 */
function conditionOn(rule: Rule, c: Rule['conditions'][number], args: unknown): Verdict {
  const { values, spread } = valuesAt(args, c.parts);
  if (!spread) return conditionVerdict(c.condition, values[0]);
  const verdicts = values.map((v) => conditionVerdict(c.condition, v));
  if (rule.outcome === 'allow') {
    if (verdicts.length === 0 || verdicts.includes('fails')) return 'fails';
    return verdicts.includes('unknown') ? 'unknown' : 'holds';
  }
  if (verdicts.includes('holds')) return 'holds';
  return verdicts.includes('unknown') ? 'unknown' : 'fails';
}

/**
 * The freezes in force at the moment a call is judged, by name (and those whose calendar could not tell);
 * null when no moment is given, which makes every freeze condition undecidable (failing closed, like an
 * argument that reads as no number).
 */
type ActiveFreezes = FreezeState | null;

/** The freezes of `policy` in force at `now` (ms), or null when `now` is not given. */
export function freezesAt(policy: Pick<Policy, 'freezes'>, now: number | undefined): ActiveFreezes {
  return now === undefined ? null : activeFreezes(policy.freezes, now);
}

/**
 * Whether every condition of `rule` holds for `args` while the freezes `active` are in force: `unknown`
 * when none fails but one is undecidable.
 */
export function ruleVerdict(rule: Rule, args: unknown, active: ActiveFreezes = null): Verdict {
  let verdict: Verdict = rule.freeze ? freezeVerdict(rule.freeze, active) : 'holds';
  if (verdict === 'fails') return verdict;
  for (const c of rule.conditions) {
    const v = conditionOn(rule, c, args);
    if (v === 'fails') return 'fails';
    if (v === 'unknown') verdict = 'unknown';
  }
  return verdict;
}

/**
 * The rule that decides `args` (-1: none, the tool's default ask), first match wins, failing closed
 * where a rule cannot be decided: an undecidable ask rule decides (its people are asked), an undecidable
 * allow rule is passed over, and after an undecidable deny rule no allow rule may decide (the call goes
 * to the first deny or ask rule that matches, else to the default ask). `verdicts` are the rules tried.
 */
function decidingRule(
  rules: readonly Rule[],
  args: unknown,
  active: ActiveFreezes = null,
): { index: number; verdicts: Verdict[] } {
  const verdicts: Verdict[] = [];
  let allowBarred = false;
  for (const [index, rule] of rules.entries()) {
    const verdict = ruleVerdict(rule, args, active);
    verdicts.push(verdict);
    if (verdict === 'holds' && !(rule.outcome === 'allow' && allowBarred)) return { index, verdicts };
    if (verdict === 'unknown' && rule.outcome === 'ask') return { index, verdicts };
    if (verdict === 'unknown' && rule.outcome === 'deny') allowBarred = true;
  }
  return { index: -1, verdicts };
}

/** Index of the rule that decides (first match wins, failing closed), or -1. */
export function firstMatch(rules: readonly Rule[], args: unknown, active: ActiveFreezes = null): number {
  return decidingRule(rules, args, active).index;
}

/** The rules written for `tool` (own keys only: a tool named `constructor` has none). */
export function rulesFor(policy: Pick<Policy, 'rules'>, tool: string): readonly Rule[] {
  return Object.hasOwn(policy.rules, tool) ? (policy.rules[tool] ?? []) : [];
}

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
    approvers: rule?.approvers ? parseApprovers(rule.approvers) : approversFor(policy, tool),
    quorum: rule?.quorum ?? 1,
    selfApproval: rule?.selfApproval ?? a.selfApproval,
    expiresAfterMs: (rule?.expiresAfterMinutes ?? a.expiresAfterMinutes) * 60_000,
    remindAtPercent: rule?.remindAtPercent ?? a.remindAtPercent,
    escalation:
      escalateTo && escalateAfter !== undefined
        ? { to: parseApprovers(escalateTo), afterMs: escalateAfter * 60_000 }
        : null,
    grant: rule?.grant ?? null,
  };
}

/**
 * What the policy decides for a call of `tool` with (validated) `args` at `now` (ms since the epoch; it
 * decides which freezes are in force). Without `now` a rule on freezes cannot be decided and fails closed.
 */
export function decideGate(policy: Policy, tool: string, args: unknown, now?: number): GateDecision {
  const rules = rulesFor(policy, tool);
  const index = firstMatch(rules, args, freezesAt(policy, now));
  const rule = rules[index];
  // A freeze may make a break-glass deny rule decide while the card waits: the card offers Break glass.
  const offered = rules.some((r) => r.breakGlass) ? { breakGlassOffered: true as const } : {};
  if (!rule) return { ...defaultAsk(policy, tool), ...offered };
  const ref = ruleRef(tool, index, rule);
  if (rule.outcome === 'allow') return { kind: 'allow', rule: ref };
  if (rule.outcome === 'deny') {
    const reason = rule.reason ?? 'denied by policy';
    return { kind: 'deny', rule: ref, reason, ...breakGlassOf(rule) };
  }
  return { ...askOf(policy, tool, ref, rule), ...offered };
}

function breakGlassOf(rule: Rule): { breakGlass?: { approvers: Approvers; auditChannel?: string } } {
  if (!rule.breakGlass) return {};
  const { approvers, auditChannel } = rule.breakGlass;
  return { breakGlass: { approvers: parseApprovers(approvers), ...(auditChannel ? { auditChannel } : {}) } };
}

/** One rule's verdict in an explanation: matched (it decides), or the first condition that did not. */
export interface RuleVerdict {
  index: number;
  label: string;
  matched: boolean;
  /** Why it did not match or cannot be decided: `params.env is "prod", expected "staging"`. */
  miss?: string;
}

/** Every rule tried, in order, up to and including the one that decided; and the decision. */
export function explainGate(
  policy: Policy,
  tool: string,
  args: unknown,
  now?: number,
): { tried: RuleVerdict[]; decision: GateDecision; freezes: ActiveFreezes } {
  const rules = rulesFor(policy, tool);
  const active = freezesAt(policy, now);
  const { index: decided, verdicts } = decidingRule(rules, args, active);
  const tried = verdicts.map((verdict, index): RuleVerdict => {
    const rule = rules[index] as Rule;
    const label = ruleLabel(tool, index, rule.name);
    if (index === decided) {
      return verdict === 'unknown'
        ? { index, label, matched: true, miss: `cannot be decided (${missOf(rule, args, active)}): asked` }
        : { index, label, matched: true };
    }
    if (verdict === 'holds')
      return {
        index,
        label,
        matched: false,
        miss: 'matches, but an undecidable deny rule before it bars allow',
      };
    const miss = missOf(rule, args, active);
    return {
      index,
      label,
      matched: false,
      miss: verdict === 'unknown' ? `cannot be decided (${miss})` : miss,
    };
  });
  return { tried, decision: decideGate(policy, tool, args, now), freezes: active };
}

/** The first condition of `rule` that does not hold for `args` at `active`, as people read it. */
function missOf(rule: Rule, args: unknown, active: ActiveFreezes): string {
  if (rule.freeze && freezeVerdict(rule.freeze, active) !== 'holds') return freezeMiss(rule.freeze, active);
  for (const c of rule.conditions) {
    if (conditionOn(rule, c, args) === 'holds') continue;
    const { values, spread } = valuesAt(args, c.parts);
    const why = values.map((v) => conditionMiss(c.condition, v)).find((m) => m !== null);
    const which = spread ? (rule.outcome === 'allow' ? ' (every element)' : ' (any element)') : '';
    return `${c.path}${which} ${why ?? (values.length === 0 ? 'has no elements' : 'does not hold')}`;
  }
  return 'holds';
}
