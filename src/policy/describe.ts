/**
 * Rules and decisions in words, for operators: `loopgate check-config` lists each tool's rules,
 * `loopgate policy test` says which rule decides a call and why. Plain text; never shown to the model.
 */
import type { Approvers } from '../approvers/approvers.js';
import { approversWords, entriesText } from '../approvers/words.js';
import { describeCondition } from './conditions.js';
import { describeFreeze } from './freeze-condition.js';
import type { GateDecision, RuleVerdict } from './gate.js';
import { ruleLabel } from './gate.js';
import type { Rule } from './rules.js';

const who = (a: Approvers) => approversWords(a) || 'nobody';
const minutes = (ms: number) => `${Math.round(ms / 60_000)} min`;

/** `when action = "restart_service" and params.env = "staging"`, or `always`. */
function whenText(rule: Rule): string {
  const parts = rule.conditions.map(({ path, condition }) => `${path} ${describeCondition(condition)}`);
  if (rule.freeze) parts.unshift(describeFreeze(rule.freeze));
  return parts.length === 0 ? 'always' : `when ${parts.join(' and ')}`;
}

/** What a rule does: `allow`, `deny: reason`, `ask S0LEADS, quorum 2, expires after 30 min, …`. */
export function outcomeText(rule: Rule): string {
  if (rule.outcome === 'allow') return 'allow (runs without a person; audited)';
  if (rule.outcome === 'deny') {
    const glass = rule.breakGlass ? ` (break glass: ${entriesText(rule.breakGlass.approvers)})` : '';
    return `deny: ${rule.reason ?? ''}${glass}`;
  }
  const parts = [`ask ${rule.approvers ? entriesText(rule.approvers) : "the tool's approvers"}`];
  if ((rule.quorum ?? 1) > 1) parts.push(`quorum ${rule.quorum}`);
  if (rule.selfApproval !== undefined)
    parts.push(`self-approval ${rule.selfApproval ? 'allowed' : 'refused'}`);
  if (rule.expiresAfterMinutes) parts.push(`expires after ${rule.expiresAfterMinutes} min`);
  if (rule.remindAtPercent?.length) parts.push(`reminders at ${rule.remindAtPercent.join('%, ')}%`);
  if (rule.escalateTo)
    parts.push(`escalates to ${entriesText(rule.escalateTo)} after ${rule.escalateAfterMinutes ?? '?'} min`);
  if (rule.grant)
    parts.push(`grants on ${rule.grant.args.join(', ')} for up to ${rule.grant.maxMinutes} min`);
  return parts.join(', ');
}

/** One line per rule of `tool`: `1. staging restarts: when … -> allow`. */
export function ruleLines(tool: string, rules: readonly Rule[]): string[] {
  return rules.map(
    (rule, i) => `${ruleLabel(tool, i, rule.name)}: ${whenText(rule)} -> ${outcomeText(rule)}`,
  );
}

/** The decision in one sentence. */
export function decisionText(decision: GateDecision): string {
  switch (decision.kind) {
    case 'allow':
      return `allowed by ${decision.rule.label}: the call runs without a person (audited as allowed by the rule)`;
    case 'deny':
      return decision.breakGlass
        ? `denied by ${decision.rule.label} ("${decision.reason}"): a card asks ${who(decision.breakGlass.approvers)} whether to break glass (never the requester); nothing runs otherwise`
        : `denied by ${decision.rule.label}: nothing runs; the model is told "${decision.reason}"`;
    case 'ask': {
      const by = decision.rule ? decision.rule.label : "no rule matched: the tool's default";
      const parts = [
        `asks ${who(decision.approvers)}`,
        `${decision.quorum} distinct approval${decision.quorum > 1 ? 's' : ''} needed`,
        `the requester ${decision.selfApproval ? 'may' : 'may not'} approve`,
        `expires after ${minutes(decision.expiresAfterMs)}`,
      ];
      if (decision.remindAtPercent.length > 0)
        parts.push(`reminders at ${decision.remindAtPercent.join('%, ')}%`);
      if (decision.escalation) {
        parts.push(
          `escalates to ${who(decision.escalation.to)} after ${minutes(decision.escalation.afterMs)}`,
        );
      }
      if (decision.grant) {
        parts.push(
          `approvers may grant similar calls (same ${decision.grant.args.join(', ')}) for up to ${decision.grant.maxMinutes} min`,
        );
      }
      return `${by}: ${parts.join('; ')}`;
    }
  }
}

/** The explanation `loopgate policy test` prints: each rule tried, then the decision. */
export function explanationText(tool: string, tried: readonly RuleVerdict[], decision: GateDecision): string {
  const lines = tried.map((t) => `  ${t.label}: ${t.matched ? 'matches' : `no match: ${t.miss ?? ''}`}`);
  if (tried.length === 0) lines.push(`  (no rules for ${tool})`);
  return `${lines.join('\n')}\n=> ${decisionText(decision)}\n`;
}
