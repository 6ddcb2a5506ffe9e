/**
 * Break glass: a deny rule may name people who can override it for one call (`breakGlass:` on the rule,
 * src/policy/rules.ts), giving a reason and an incident reference. Whether the glass can be broken is
 * judged by the rule in force at the moment of the deciding submission (invariant 9), never by the rule
 * that asked: a freeze that ended since, or a rule that no longer allows it, refuses it. Pure: the bot
 * resolves group and on-call membership, and records the decision atomically.
 */
import type { Approvers } from '../approvers/approvers.js';
import { decideGate, freezesAt } from './gate.js';

type Policy = Parameters<typeof decideGate>[0];

/** Longest reason and incident reference accepted (the modal enforces them too). */
export const MAX_BREAK_GLASS_REASON = 1_000;
export const MAX_INCIDENT_REF = 100;

type BreakGlassInForce =
  | {
      kind: 'available';
      /** The deny rule in force: `rule 1 of deploy (freeze)`. */
      rule: string;
      reason: string;
      approvers: Approvers;
      auditChannel?: string;
      freezes: readonly string[];
    }
  /** The rule in force is not a deny rule (a freeze ended, say): approve or reject as usual. */
  | { kind: 'not_denied' }
  /** A deny rule is in force, and it does not allow break glass. */
  | { kind: 'not_allowed'; rule: string };

/** Whether the rule in force at `now` for `round`'s call is a deny rule that allows break glass. */
export function breakGlassInForce(
  policy: Policy,
  round: { tool: string; args: unknown },
  now: number,
): BreakGlassInForce {
  const current = decideGate(policy, round.tool, round.args, now);
  if (current.kind !== 'deny') return { kind: 'not_denied' };
  if (!current.breakGlass) return { kind: 'not_allowed', rule: current.rule.label };
  return {
    kind: 'available',
    rule: current.rule.label,
    reason: current.reason,
    approvers: current.breakGlass.approvers,
    ...(current.breakGlass.auditChannel ? { auditChannel: current.breakGlass.auditChannel } : {}),
    freezes: freezesAt(policy, now)?.inForce ?? [],
  };
}

export interface BreakGlassForm {
  reason: string;
  incident: string;
}

/**
 * The form's problems by field (`reason`, `incident`), or the trimmed values. Both are required: an
 * override nobody can trace to an incident is what the review afterwards could not judge.
 */
export function breakGlassFormProblems(form: {
  reason: string | null | undefined;
  incident: string | null | undefined;
}):
  | { ok: true; form: BreakGlassForm }
  | { ok: false; errors: Partial<Record<keyof BreakGlassForm, string>> } {
  const reason = (form.reason ?? '').trim();
  const incident = (form.incident ?? '').trim();
  const errors: Partial<Record<keyof BreakGlassForm, string>> = {};
  if (reason.length === 0) errors.reason = 'A reason is required to break glass.';
  else if (reason.length > MAX_BREAK_GLASS_REASON)
    errors.reason = `At most ${MAX_BREAK_GLASS_REASON} characters (this one has ${reason.length}).`;
  if (incident.length === 0) errors.incident = 'An incident reference is required (e.g. INC-1234).';
  else if (incident.length > MAX_INCIDENT_REF)
    errors.incident = `At most ${MAX_INCIDENT_REF} characters (this one has ${incident.length}).`;
  else if (/[\n\r]/.test(incident)) errors.incident = 'One line only.';
  return Object.keys(errors).length > 0 ? { ok: false, errors } : { ok: true, form: { reason, incident } };
}

/** The decision reason stored on the approval and shown on the card. */
export function breakGlassDecisionReason(form: BreakGlassForm): string {
  return `break glass (incident ${form.incident}): ${form.reason}`;
}
