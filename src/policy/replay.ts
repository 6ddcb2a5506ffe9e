/**
 * Policy replay: what a proposed policy would have done with calls that were really asked. Pure: the
 * CLI (`loopgate policy replay`) reads the recorded calls from the audit log and approval records, and
 * this module compares, call by call, what was recorded with what the proposed policy decides.
 *
 * What was recorded is read as the policy then decided it: an `allow` or `deny` rule (`via: rule`), or
 * people asked (whoever then decided, a grant included). An escalation's added approvers are not part
 * of what the rule asked.
 */
import type { GateDecision } from './gate.js';

/** Who may decide: Slack user ids and user group ids. */
interface ApproverIds {
  readonly users: readonly string[];
  readonly groups: readonly string[];
}

/** The part of an approval record that says what the policy decided then. */
interface RecordedCall {
  via?: 'rule' | 'grant' | 'shadow' | undefined;
  status: string;
  rule?: string | undefined;
  approvers: ApproverIds;
  quorum?: number | undefined;
  escalation?: { to: ApproverIds } | undefined;
  escalatedAt?: number | undefined;
}

export type Outcome =
  | { kind: 'not_offered' }
  | { kind: 'allow'; rule: string }
  | { kind: 'deny'; rule: string }
  | { kind: 'ask'; rule: string | null; approvers: string[]; quorum: number };

export const CHANGES = [
  'no_longer_offered',
  'newly_allowed',
  'newly_denied',
  'no_longer_allowed',
  'no_longer_denied',
  'approvers',
  'quorum',
] as const;
export type Change = (typeof CHANGES)[number];

const sorted = (a: ApproverIds) => [...new Set([...a.users, ...a.groups])].sort();

/** What the policy decided when the call was asked. */
export function recordedOutcome(record: RecordedCall): Outcome {
  const rule = record.rule || null;
  if (record.via === 'rule') {
    return record.status === 'approved'
      ? { kind: 'allow', rule: rule ?? 'a rule' }
      : { kind: 'deny', rule: rule ?? 'a rule' };
  }
  const added = record.escalatedAt && record.escalation ? new Set(sorted(record.escalation.to)) : new Set();
  return {
    kind: 'ask',
    rule,
    approvers: sorted(record.approvers).filter((id) => !added.has(id)),
    quorum: record.quorum ?? 1,
  };
}

/** A gate decision in the same terms; null: the proposed policy does not offer the tool at all. */
export function proposedOutcome(decision: GateDecision | null): Outcome {
  if (decision === null) return { kind: 'not_offered' };
  if (decision.kind === 'allow') return { kind: 'allow', rule: decision.rule.label };
  if (decision.kind === 'deny') return { kind: 'deny', rule: decision.rule.label };
  return {
    kind: 'ask',
    rule: decision.rule?.label ?? null,
    approvers: sorted(decision.approvers),
    quorum: decision.quorum,
  };
}

/** What changes from `before` to `after` (empty: the same people, or the same rule outcome, decide). */
export function changesBetween(before: Outcome, after: Outcome): Change[] {
  if (after.kind === 'not_offered') return before.kind === 'not_offered' ? [] : ['no_longer_offered'];
  if (after.kind === 'allow') return before.kind === 'allow' ? [] : ['newly_allowed'];
  if (after.kind === 'deny') return before.kind === 'deny' ? [] : ['newly_denied'];
  if (before.kind === 'allow') return ['no_longer_allowed'];
  if (before.kind === 'deny') return ['no_longer_denied'];
  if (before.kind === 'not_offered') return [];
  const changes: Change[] = [];
  if (before.approvers.join(',') !== after.approvers.join(',')) changes.push('approvers');
  if (before.quorum !== after.quorum) changes.push('quorum');
  return changes;
}

/** `allowed by rule 1 of run_action (staging)`, `asked of S0SRE (quorum 2) by the default`. */
export function outcomeText(o: Outcome): string {
  if (o.kind === 'not_offered') return 'not offered to the model (the tool is not enabled)';
  if (o.kind === 'allow') return `allowed by ${o.rule}`;
  if (o.kind === 'deny') return `denied by ${o.rule}`;
  const quorum = o.quorum > 1 ? ` (quorum ${o.quorum})` : '';
  return `asked of ${o.approvers.join(', ') || 'nobody'}${quorum} by ${o.rule ?? "the tool's default"}`;
}
