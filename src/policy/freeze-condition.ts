/**
 * A rule's `when: { freeze: … }`: whether change freezes (src/policy/freezes.ts) are in force when the
 * rule is evaluated. `true`: some freeze is in force; `false`: none is; a name or a list of names: one of
 * those is. Written in `when` like an argument condition, so a tool argument named `freeze` cannot be
 * matched by a rule (the key always means the freeze).
 */
import { z } from 'zod';
import type { Verdict } from './conditions.js';
import type { FreezeState } from './freezes.js';

const name = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { error: 'expected a freeze name' });

/** `names: null` means any freeze; `inForce: false` means the condition asks that none be in force. */
export interface FreezeCondition {
  inForce: boolean;
  names: readonly string[] | null;
}

export const freezeCondition = z
  .union([z.boolean(), name, z.array(name).min(1, { error: 'expected at least one freeze name' })], {
    error: 'expected true, false, a freeze name or a list of freeze names',
  })
  .transform(
    (v): FreezeCondition =>
      typeof v === 'boolean'
        ? { inForce: v, names: null }
        : { inForce: true, names: typeof v === 'string' ? [v] : v },
  );

/**
 * Whether `condition` holds when the freezes `active` are in force; `unknown` when the moment is not
 * known (`active` null), or when a freeze it names has a calendar that could not be read and the known
 * freezes do not settle it: src/policy/gate.ts then fails closed, as for an undecidable argument.
 */
export function freezeVerdict(condition: FreezeCondition, active: FreezeState | null): Verdict {
  if (active === null) return 'unknown';
  const named = (list: readonly string[]) =>
    condition.names ? condition.names.some((n) => list.includes(n)) : list.length > 0;
  if (named(active.inForce)) return condition.inForce ? 'holds' : 'fails';
  if (named(active.unknown)) return 'unknown';
  return condition.inForce ? 'fails' : 'holds';
}

/** The condition as the operator would read it back: `a freeze is in force`, `year-end is in force`. */
export function describeFreeze(condition: FreezeCondition): string {
  const which = condition.names ? condition.names.join(' or ') : 'a freeze';
  if (condition.inForce) return `${which} is in force`;
  return 'no freeze is in force';
}

/** Why the condition does not hold at a moment, for `loopgate policy test`. */
export function freezeMiss(condition: FreezeCondition, active: FreezeState | null): string {
  if (active === null) return 'freeze: the time is not known';
  const now = active.inForce.length > 0 ? `in force: ${active.inForce.join(', ')}` : 'no freeze is in force';
  const unknown =
    active.unknown.length > 0 ? `; not known (calendar unread): ${active.unknown.join(', ')}` : '';
  return `freeze: expected ${describeFreeze(condition)}, ${now}${unknown}`;
}
