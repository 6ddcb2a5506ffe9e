/**
 * Approvers in plain words for operators (`loopgate check-config`, `loopgate policy test`, the audit of
 * an escalation): ids as written, each on-call source with the fallback that decides when it cannot answer.
 */
import type { ApproverEntry, Approvers, OncallApprover } from './approvers.js';
import { sourceLabel } from './oncall/source.js';

const oncallWords = (o: OncallApprover) =>
  `the on-call of ${sourceLabel(o.source)} (fallback: ${[...o.fallback.users, ...o.fallback.groups].join(', ')})`;

/** `U1, S2, the on-call of PagerDuty schedule P1ABC (fallback: S0LEADS)`; empty string for none. */
export function entriesText(entries: readonly ApproverEntry[]): string {
  return entries.map((e) => (typeof e === 'string' ? e : oncallWords(e))).join(', ');
}

/** The same for a stored `Approvers`. */
export function approversWords(a: Approvers): string {
  return [...a.users, ...a.groups, ...(a.oncall ?? []).map(oncallWords)].join(', ');
}
