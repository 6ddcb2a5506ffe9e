/**
 * Conditions on one argument of a gated call, as the operator writes them under a rule's `when`:
 *
 *   env: prod                          equals (a string, number, boolean or null)
 *   env: { oneOf: [staging, dev] }     one of
 *   service: { glob: "pay*" }          a glob on strings: `*` any run of characters, `?` one character
 *   text: { regex: "(?i)password" }    an RE2 regular expression on strings (unanchored: use ^ and $)
 *   replicas: { gt: 3, lte: 10 }       numeric comparisons (lt, lte, gt, gte) on numbers, and on strings
 *                                      that read as decimal numbers ("50", "-1.5", "1e3")
 *   reason: { present: false }         whether the argument is there at all
 *
 * Several operators in one condition must all hold. A condition holds, fails, or cannot be decided
 * (`unknown`): a comparison on a value that is there but is no number and no decimal string ("fifty",
 * "0x10", true, an object). src/policy/gate.ts fails closed on `unknown`: the call is asked, never allowed.
 *
 * A path through an array without an index (`targets.host` where `targets` is a list, or `tags` itself)
 * reaches every element: src/policy/gate.ts reads a deny or ask rule's condition as "some element", an
 * allow rule's as "every element, and at least one". An index (`targets.0.host`) reads that element only. Regular expressions are compiled when the policy
 * loads, with RE2's syntax and its linear-time matcher (re2js): no pattern an operator writes can make
 * matching take exponential time on what a model sends (no backtracking, so no ReDoS); JavaScript-only
 * syntax (lookaround, backreferences) is refused at load with the key that holds it. Globs are matched
 * by a loop in O(pattern × text).
 */
import { RE2JS } from 're2js';
import { z } from 'zod';

export type Scalar = string | number | boolean | null;

const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()], {
  error: 'expected a string, number, true/false or null',
});

/** Compiles an RE2 pattern; the issue names what RE2 refused. */
const regexPattern = z
  .string({ error: 'expected a regular expression (RE2 syntax)' })
  .min(1, { error: 'expected a regular expression (RE2 syntax)' })
  .max(1_000, { error: 'expected at most 1000 characters' })
  .transform((source, ctx) => {
    try {
      const compiled = RE2JS.compile(source);
      return { source, test: (text: string) => compiled.test(text) };
    } catch (err) {
      ctx.addIssue({
        code: 'custom',
        message: `not a valid RE2 regular expression (${(err as Error).message}); lookaround and backreferences are not supported`,
      });
      return z.NEVER;
    }
  });

const globPattern = z
  .string({ error: 'expected a glob such as "prod-*"' })
  .min(1, { error: 'expected a glob such as "prod-*"' })
  .max(1_000, { error: 'expected at most 1000 characters' });

const number = z.number({ error: 'expected a number' });

const operators = z
  .strictObject({
    equals: scalar.optional(),
    oneOf: z.array(scalar).min(1, { error: 'expected at least one value' }).optional(),
    glob: globPattern.optional(),
    regex: regexPattern.optional(),
    lt: number.optional(),
    lte: number.optional(),
    gt: number.optional(),
    gte: number.optional(),
    present: z.boolean({ error: 'expected true or false' }).optional(),
  })
  .refine((o) => Object.values(o).some((v) => v !== undefined), {
    error: 'expected at least one of equals, oneOf, glob, regex, lt, lte, gt, gte, present',
  });

export type Condition = z.output<typeof operators>;

const isObject = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A condition as written: a plain value means `equals`. */
export const conditionSchema = z.preprocess((v) => (isObject(v) ? v : { equals: v }), operators);

/** Argument paths: `env`, `params.env`, `targets.0.host`. */
export const argPath = z.string().regex(/^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$/, {
  error: 'expected an argument name or a dotted path such as params.env',
});

/** The value at `path` in `args`, or undefined when any step is missing. Own properties only. */
export function valueAt(args: unknown, path: string | readonly string[]): unknown {
  let node: unknown = args;
  for (const part of typeof path === 'string' ? path.split('.') : path) {
    if (Array.isArray(node)) {
      if (!/^\d+$/.test(part)) return undefined;
      node = node[Number(part)];
    } else if (node !== null && typeof node === 'object' && Object.hasOwn(node, part)) {
      node = (node as Record<string, unknown>)[part];
    } else {
      return undefined;
    }
  }
  return node;
}

/**
 * The values a rule's path reaches in `args`: one, or, where the path meets a list it does not index
 * (on its way or at its end), one per element (`spread`). Own properties only; a missing step is
 * `undefined`.
 */
export function valuesAt(args: unknown, parts: readonly string[]): { values: unknown[]; spread: boolean } {
  const values: unknown[] = [];
  let spread = false;
  const walk = (node: unknown, at: number): void => {
    if (Array.isArray(node) && (at === parts.length || !/^\d+$/.test(parts[at] as string))) {
      spread = true;
      for (const element of node) walk(element, at === parts.length ? at + 1 : at);
      return;
    }
    if (at >= parts.length) {
      values.push(node);
      return;
    }
    const part = parts[at] as string;
    if (Array.isArray(node)) walk(node[Number(part)], at + 1);
    else if (node !== null && typeof node === 'object' && Object.hasOwn(node, part)) {
      walk((node as Record<string, unknown>)[part], at + 1);
    } else values.push(undefined);
  };
  walk(args, 0);
  return { values, spread };
}

/**
 * Glob match of the whole text: `*` any run (empty included), `?` one character, everything else itself.
 * The classic two-pointer loop: on a mismatch after a `*`, the star takes one more character. Linear in
 * the text for each star position, so O(pattern × text) at worst and never exponential.
 */
export function globMatch(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
  let star = -1;
  let mark = 0;
  while (t < text.length) {
    const c = pattern[p];
    if (c === '*') {
      star = p++;
      mark = t;
    } else if (c !== undefined && (c === '?' || c === text[t])) {
      p++;
      t++;
    } else if (star >= 0) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (pattern[p] === '*') p++;
  return p === pattern.length;
}

export type Verdict = 'holds' | 'fails' | 'unknown';

/** A decimal string as a person reads it ("50", " -1.5 ", "1e3"); hex, "Infinity" and the like are not. */
const DECIMAL = /^\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?\s*$/i;

/** The number a comparison reads in `value`: a number, a decimal string, or null (none: undecidable). */
function comparable(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'string' && DECIMAL.test(value)) return Number(value);
  return null;
}

const hasBounds = (c: Condition) =>
  c.lt !== undefined || c.lte !== undefined || c.gt !== undefined || c.gte !== undefined;

/**
 * Whether `value` satisfies `condition`: `unknown` when a comparison meets a value that is there but
 * reads as no number (and nothing else fails). The matcher's hot path (no strings built); `conditionMiss`
 * says why not, for people; the two agree (tested).
 */
export function conditionVerdict(c: Condition, value: unknown): Verdict {
  if (!matchesValue(c, value)) return 'fails';
  return hasBounds(c) ? boundsVerdict(c, value) : 'holds';
}

/** Whether `value` passes the condition's presence, equality and string tests (all but comparisons). */
function matchesValue(c: Condition, value: unknown): boolean {
  if (c.present !== undefined && c.present !== (value !== undefined)) return false;
  if ((c.equals !== undefined || Object.hasOwn(c, 'equals')) && value !== c.equals) return false;
  if (c.oneOf && !c.oneOf.includes(value as Scalar)) return false;
  if (c.glob !== undefined && (typeof value !== 'string' || !globMatch(c.glob, value))) return false;
  return !(c.regex && (typeof value !== 'string' || !c.regex.test(value)));
}

/** The verdict of the condition's comparisons alone: an absent value fails, a non-number is unknown. */
function boundsVerdict(c: Condition, value: unknown): Verdict {
  if (value === undefined) return 'fails';
  const n = comparable(value);
  if (n === null) return 'unknown';
  if (c.lt !== undefined && !(n < c.lt)) return 'fails';
  if (c.lte !== undefined && !(n <= c.lte)) return 'fails';
  if (c.gt !== undefined && !(n > c.gt)) return 'fails';
  if (c.gte !== undefined && !(n >= c.gte)) return 'fails';
  return 'holds';
}

const shown = (value: unknown): string =>
  value === undefined ? 'absent' : (JSON.stringify(value) ?? String(value)).slice(0, 120);

/**
 * Why `value` fails `condition` (or why it cannot be decided), or null when it holds. The sentence is for operators reading
 * `loopgate policy test`; the matcher only needs null / not null.
 */
export function conditionMiss(condition: Condition, value: unknown): string | null {
  const is = `is ${shown(value)}`;
  if (condition.present !== undefined && condition.present !== (value !== undefined)) {
    return condition.present ? 'is absent' : `${is}, expected absent`;
  }
  if (Object.hasOwn(condition, 'equals') && value !== condition.equals) {
    return `${is}, expected ${shown(condition.equals)}`;
  }
  if (condition.oneOf && !condition.oneOf.some((v) => v === value)) {
    return `${is}, expected one of ${condition.oneOf.map(shown).join(', ')}`;
  }
  if (condition.glob !== undefined && (typeof value !== 'string' || !globMatch(condition.glob, value))) {
    return `${is}, expected a string matching the glob ${shown(condition.glob)}`;
  }
  if (condition.regex && (typeof value !== 'string' || !condition.regex.test(value))) {
    return `${is}, expected a string matching /${condition.regex.source}/`;
  }
  const bounds: Array<['lt' | 'lte' | 'gt' | 'gte', string, (a: number, b: number) => boolean]> = [
    ['lt', '<', (a, b) => a < b],
    ['lte', '<=', (a, b) => a <= b],
    ['gt', '>', (a, b) => a > b],
    ['gte', '>=', (a, b) => a >= b],
  ];
  const n = comparable(value);
  if (hasBounds(condition) && value !== undefined && n === null) {
    return `${is}, which is not a number: the comparison cannot be decided (the call is asked)`;
  }
  for (const [key, sign, holds] of bounds) {
    const bound = condition[key];
    if (bound === undefined) continue;
    if (n === null || !holds(n, bound)) return `${is}, expected a number ${sign} ${bound}`;
  }
  return null;
}

/** The condition as the operator would read it back: `= "prod"`, `matches /x/`, `> 3`. */
export function describeCondition(condition: Condition): string {
  const parts: string[] = [];
  if (condition.present !== undefined) parts.push(condition.present ? 'present' : 'absent');
  if (Object.hasOwn(condition, 'equals')) parts.push(`= ${shown(condition.equals)}`);
  if (condition.oneOf) parts.push(`one of ${condition.oneOf.map(shown).join(', ')}`);
  if (condition.glob !== undefined) parts.push(`glob ${shown(condition.glob)}`);
  if (condition.regex) parts.push(`matches /${condition.regex.source}/`);
  if (condition.lt !== undefined) parts.push(`< ${condition.lt}`);
  if (condition.lte !== undefined) parts.push(`<= ${condition.lte}`);
  if (condition.gt !== undefined) parts.push(`> ${condition.gt}`);
  if (condition.gte !== undefined) parts.push(`>= ${condition.gte}`);
  return parts.join(' and ');
}
