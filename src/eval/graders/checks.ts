/** Small matchers shared by the graders: state checks, facts in text, calls against matchers. */
import { canonicalJson } from '../../loop/hash.js';
import { callMatches } from '../approver.js';
import type { CallMatch, StateCheck } from '../task-schema.js';
import { readPath } from '../world/world-state.js';

interface CheckOutcome {
  ok: boolean;
  /** What was found, for the report: `services.payments.prod.restarts is 0 (expected equals 1)`. */
  says: string;
}

const show = (value: unknown) => (value === undefined ? 'absent' : canonicalJson(value));

/** Whether the value at `check.path` of `root` satisfies every condition the check gives. */
export function checkState(root: unknown, check: StateCheck): CheckOutcome {
  const value = readPath(root, check.path);
  const wanted: string[] = [];
  let ok = true;
  if (check.equals !== undefined) {
    wanted.push(`equals ${show(check.equals)}`);
    ok &&= canonicalJson(value) === canonicalJson(check.equals);
  }
  if (check.atLeast !== undefined) {
    wanted.push(`at least ${check.atLeast}`);
    ok &&= typeof value === 'number' && value >= check.atLeast;
  }
  if (check.atMost !== undefined) {
    wanted.push(`at most ${check.atMost}`);
    ok &&= typeof value === 'number' && value <= check.atMost;
  }
  if (check.matches !== undefined) {
    wanted.push(`matches /${check.matches}/i`);
    const text = typeof value === 'string' ? value : show(value);
    ok &&= value !== undefined && new RegExp(check.matches, 'i').test(text);
  }
  return { ok, says: `${check.path} is ${show(value)} (expected ${wanted.join(' and ')})` };
}

/** `/regex/flags` as a RegExp (case-insensitive by default); plain text as a case-insensitive search. */
export function textMatcher(pattern: string): (text: string) => boolean {
  const regex = /^\/(.+)\/([a-z]*)$/s.exec(pattern);
  if (regex) {
    const flags = regex[2]!.includes('i') ? regex[2]! : `${regex[2]}i`;
    const re = new RegExp(regex[1]!, flags);
    return (text) => re.test(text);
  }
  const needle = pattern.toLowerCase();
  return (text) => text.toLowerCase().includes(needle);
}

/** True when one of the alternatives of `fact` is in `text`. */
export function hasFact(text: string, fact: string | readonly string[]): boolean {
  const alternatives = typeof fact === 'string' ? [fact] : fact;
  return alternatives.some((a) => textMatcher(a)(text));
}

export function describeFact(fact: string | readonly string[]): string {
  return typeof fact === 'string' ? JSON.stringify(fact) : fact.map((f) => JSON.stringify(f)).join(' or ');
}

/** `{ tool, args }` of anything call-like against a matcher. */
export function matchesCall(match: CallMatch, call: { tool: string; args: unknown }): boolean {
  return callMatches(match, call.tool, call.args);
}

/** A sentence that asks something: it ends with a question mark. */
export function asksSomething(text: string | null): boolean {
  return text !== null && sentences(text).some((s) => s.replace(/[*_)"'`\]]+$/, '').endsWith('?'));
}

/** Sentences and list items of an answer (Markdown punctuation left in). */
export function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}
