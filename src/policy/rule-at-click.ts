/**
 * The rule in force when a person decides (invariant 9: authority is judged when it is used). What can
 * change the rule deciding a waiting call is time (a change freeze that started or ended since the call was
 * asked), a calendar freeze's feed (an event added or removed), or a policy deployed since. This compares
 * the rule the round recorded when it was asked (never a re-reading of that moment, which a calendar
 * edited since would rewrite) with the decision now. The same rule: the approval stands as
 * asked (with its escalation and votes). Another rule: a deny refuses approval, an ask names the people
 * and the quorum the click is judged by. An allow rule in force now changes nothing: the people asked
 * still decide. Pure: the bot passes its clock's time.
 */
import type { AskDecision, GateDecision } from './gate.js';
import { decideGate, freezesAt } from './gate.js';

/** The policy as the gate reads it (named through the gate: no new import of config from policy). */
type Policy = Parameters<typeof decideGate>[0];

type RuleAtClick =
  | { kind: 'as_asked' }
  | {
      kind: 'denied';
      rule: string;
      reason: string;
      freezes: readonly string[];
      /** The deny rule allows break glass by these people (src/policy/break-glass.ts). */
      breakGlass?: Extract<GateDecision, { kind: 'deny' }>['breakGlass'];
    }
  | { kind: 'asked_anew'; ask: AskDecision; freezes: readonly string[] };

/** The rule in force at `now` for the call of `round` (its tool, its arguments, the rule that asked it). */
export function ruleAtClick(
  policy: Policy,
  round: { tool: string; args: unknown; rule?: string | undefined },
  now: number,
): RuleAtClick {
  const current = decideGate(policy, round.tool, round.args, now);
  const freezes = () => freezesAt(policy, now)?.inForce ?? [];
  // A deny in force always refuses approval, also one that decided as asked (a break-glass card).
  if (current.kind === 'deny') {
    const { rule, reason, breakGlass } = current;
    return {
      kind: 'denied',
      rule: rule.label,
      reason,
      freezes: freezes(),
      ...(breakGlass ? { breakGlass } : {}),
    };
  }
  // A round without a rule was asked by the tool's default (or before rules existed).
  if ((round.rule ?? '') === (current.rule?.label ?? '') || current.kind === 'allow')
    return { kind: 'as_asked' };
  return { kind: 'asked_anew', ask: current, freezes: freezes() };
}
