/**
 * Warnings about rules that cannot apply as written, against the JSON Schema of their tool's arguments
 * (`loopgate check-config` prints them, workers log them at start-up): a condition on an argument the
 * schema does not have, an operator that cannot hold for the argument's type (a glob on a number, a
 * value the schema never allows), a comparison on a string-typed argument (compared as a number only
 * when the value reads as one, else the call is asked), and an index into a list (that element only).
 * A schema that does not say (no type, open objects) gives no warning.
 */
import { describeCondition, type Scalar } from './conditions.js';
import type { RuleCondition, RulesSection } from './rules.js';

type Schema = Record<string, unknown>;

/** A rule that cannot apply as written: its key in the policy file, and why (a ConfigProblem's shape). */
interface RuleWarning {
  key: string;
  problem: string;
}

const isSchema = (v: unknown): v is Schema => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The branches of `anyOf` / `oneOf` / `allOf`, or the schema itself. */
function branches(schema: Schema): Schema[] {
  const list = [schema.anyOf, schema.oneOf].find(Array.isArray) as unknown[] | undefined;
  return list ? list.filter(isSchema).flatMap(branches) : [schema];
}

/** The JSON types one branch allows, or null when it does not say. */
function branchTypes(b: Schema): string[] | null {
  const values = Array.isArray(b.enum) ? b.enum : 'const' in b ? [b.const] : null;
  if (values) return values.map((v) => (v === null ? 'null' : typeof v));
  if (typeof b.type === 'string') return [b.type];
  if (Array.isArray(b.type)) return b.type.map(String);
  return null;
}

/** The JSON types a schema allows, or null when it does not say. */
function typesOf(schema: Schema): Set<string> | null {
  const out = new Set<string>();
  for (const b of branches(schema)) {
    const types = branchTypes(b);
    if (types === null) return null;
    for (const t of types) out.add(t);
  }
  for (const t of [...out]) if (t === 'integer') out.add('number');
  return out;
}

/** Where a path leads in a schema: the schemas it may reach, and what the walk met on the way. */
interface Reached {
  schemas: Schema[];
  /** A list read at an index (`targets.0.host`). */
  indexed: boolean;
  /** A step that no branch has (objects closed by additionalProperties: false). */
  missing: string | null;
}

/** What one step of a walk met: the schemas it leads to, a list read at an index, an open object. */
interface Step {
  next: Schema[];
  indexed: boolean;
  open: boolean;
}

/** Takes step `part` from `s` into `step` (a list not read at an index is stepped through to its items). */
function stepFrom(s: Schema, part: string, step: Step): void {
  for (const b of branches(s)) {
    if (b.type === 'array' && isSchema(b.items)) {
      if (/^\d+$/.test(part)) {
        step.indexed = true;
        step.next.push(b.items);
      } else stepFrom(b.items, part, step);
    } else if (isSchema(b.properties) && Object.hasOwn(b.properties, part)) {
      const p = (b.properties as Record<string, unknown>)[part];
      if (isSchema(p)) step.next.push(p);
    } else if (b.additionalProperties !== false) {
      step.open = true;
    }
  }
}

function walk(schema: Schema, parts: readonly string[]): Reached {
  let current: Schema[] = [schema];
  let indexed = false;
  for (const [i, part] of parts.entries()) {
    const step: Step = { next: [], indexed: false, open: false };
    for (const s of current) stepFrom(s, part, step);
    indexed ||= step.indexed;
    if (step.open) return { schemas: [], indexed, missing: null };
    if (step.next.length === 0) return { schemas: [], indexed, missing: parts.slice(0, i + 1).join('.') };
    current = step.next;
  }
  // A list at the end: its elements are what the condition reads.
  const ends = current.flatMap((s) =>
    branches(s).map((b) => (b.type === 'array' && isSchema(b.items) ? b.items : b)),
  );
  return { schemas: ends, indexed, missing: null };
}

/** Every value the schemas allow when each of their branches lists them (`enum`, `const`), else null. */
function enumsOf(schemas: readonly Schema[]): Scalar[] | null {
  const all = schemas.flatMap(branches);
  if (!all.every((b) => Array.isArray(b.enum) || 'const' in b)) return null;
  return all.flatMap((b) => (Array.isArray(b.enum) ? (b.enum as Scalar[]) : [b.const as Scalar]));
}

const typeOfValue = (v: Scalar) => (v === null ? 'null' : typeof v);

/** Why `c` cannot hold (or holds only partly) for values of `types`, or null. */
function operatorProblem(c: RuleCondition, types: Set<string>, enums: Scalar[] | null): string | null {
  const { condition } = c;
  const typed = [...types].filter((t) => t !== 'integer').join(' or ');
  const cannot = (what: string) =>
    `${describeCondition(condition)} can never hold: ${what}, and ${c.path} is typed ${typed}`;
  const listed: Scalar[] = [
    ...(Object.hasOwn(condition, 'equals') ? [condition.equals as Scalar] : []),
    ...(condition.oneOf ?? []),
  ];
  if (listed.length > 0) {
    const possible = listed.filter((v) => types.has(typeOfValue(v)) && (enums === null || enums.includes(v)));
    if (possible.length === 0) return cannot(`no value given is one the schema allows`);
  }
  if ((condition.glob !== undefined || condition.regex) && !types.has('string')) {
    return cannot('glob and regex match strings');
  }
  const compares = ['lt', 'lte', 'gt', 'gte'].some((k) => condition[k as 'lt'] !== undefined);
  if (compares && !types.has('number')) {
    if (!types.has('string')) return cannot('comparisons read numbers');
    return `${describeCondition(condition)} compares numbers, and ${c.path} is typed string: a value that reads as a decimal number ("50") is compared as one; any other value makes the call asked`;
  }
  return null;
}

/** The JSON types every schema reached allows, or null when one does not say (or none was reached). */
function typesReached(schemas: readonly Schema[]): Set<string> | null {
  if (schemas.length === 0) return null;
  const types = new Set<string>();
  for (const s of schemas) {
    const t = typesOf(s);
    if (t === null) return null;
    for (const x of t) types.add(x);
  }
  return types;
}

/** The warnings for one condition of a rule on `tool`, whose arguments `schema` describes. */
function conditionWarnings(tool: string, schema: Schema, c: RuleCondition, key: string): RuleWarning[] {
  const reached = walk(schema, c.parts);
  if (reached.missing !== null) {
    return [{ key, problem: `${tool} has no argument ${reached.missing}: this condition never holds` }];
  }
  const out: RuleWarning[] = [];
  if (reached.indexed) {
    const every = c.parts.filter((p) => !/^\d+$/.test(p)).join('.');
    out.push({
      key,
      problem: `reads one element of a list only; ${every} reads every element (some of them for deny and ask, all of them for allow)`,
    });
  }
  const types = typesReached(reached.schemas);
  if (types === null) return out;
  const problem = operatorProblem(c, types, enumsOf(reached.schemas));
  if (problem) out.push({ key, problem });
  return out;
}

/** Warnings for every rule of `rules` whose tool has a schema in `schemas` (tool name -> JSON Schema). */
export function ruleSchemaWarnings(rules: RulesSection, schemas: ReadonlyMap<string, Schema>): RuleWarning[] {
  const out: RuleWarning[] = [];
  for (const [tool, list] of Object.entries(rules)) {
    const schema = schemas.get(tool);
    if (!schema) continue;
    list.forEach((rule, i) => {
      for (const c of rule.conditions) {
        out.push(...conditionWarnings(tool, schema, c, `rules.${tool}[${i}].when.${c.path}`));
      }
    });
  }
  return out;
}
