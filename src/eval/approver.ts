/**
 * The scripted approver: each gated call put to a person is decided by the first of the task's rules
 * that matches it (approve, reject with a reason, let expire, or edit the arguments). A call no rule
 * matches is rejected, as a careful approver would reject what nobody asked for.
 */
import type { Policy } from '../config/policy.js';
import { approversFor } from '../config/policy-limits.js';
import type { Decision, GatedCall } from '../loop/types.js';
import { contains } from './merge.js';
import type { ApproverRule, CallMatch } from './task-schema.js';

export const UNEXPECTED_CALL_REASON = 'not something I expected to approve for this request';

/** What the scripted approver does with one call. */
export type ScriptedDecision =
  | { kind: 'decision'; decision: Decision; rule: number | null }
  | { kind: 'edit'; args: Record<string, unknown>; by: string; rule: number };

export function callMatches(match: CallMatch | undefined, tool: string, args: unknown): boolean {
  if (!match) return true;
  return match.tool === tool && (match.args === undefined || contains(args, match.args));
}

/** Who decides a call of `tool` when the rule names nobody: the policy's first listed user approver. */
export function defaultApprover(policy: Policy, tool: string, requester: string): string {
  const { users } = approversFor(policy, tool);
  return users.find((u) => u !== requester) ?? users[0] ?? 'U0APPROVER';
}

export function decide(
  rules: readonly ApproverRule[],
  call: GatedCall,
  approver: (tool: string) => string,
): ScriptedDecision {
  const index = rules.findIndex((r) => callMatches(r.match, call.tool, call.args));
  const rule = rules[index];
  const by = rule?.by ?? approver(call.tool);
  const base = { toolCallId: call.toolCallId };
  if (!rule) {
    return {
      kind: 'decision',
      decision: { ...base, kind: 'rejected', by, reason: UNEXPECTED_CALL_REASON },
      rule: null,
    };
  }
  switch (rule.decide) {
    case 'approve':
      // Exactly the arguments that were shown: the hash binds the approval to them (invariant 2).
      return {
        kind: 'decision',
        decision: { ...base, kind: 'approved', argsHash: call.argsHash, by },
        rule: index,
      };
    case 'reject':
      return {
        kind: 'decision',
        decision: { ...base, kind: 'rejected', by, ...(rule.reason ? { reason: rule.reason } : {}) },
        rule: index,
      };
    case 'expire':
      return { kind: 'decision', decision: { ...base, kind: 'expired' }, rule: index };
    case 'edit':
      return { kind: 'edit', args: rule.args ?? {}, by, rule: index };
  }
}
