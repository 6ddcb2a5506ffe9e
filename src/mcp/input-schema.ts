/**
 * A server's JSON Schema for a tool's input, compiled with ajv and wrapped as the zod `parameters` the
 * engine expects: `safeParse` runs the compiled validator (so a bad argument is an `invalid_arguments`
 * result before any gating), and the schema itself rides along as zod metadata, so the model is sent the
 * server's schema unchanged. A schema ajv refuses makes the tool unusable.
 *
 * The schema is the server's, so it is untrusted: its `pattern`s run on RE2 (re2js, linear time: no
 * pattern can make an argument block the worker; lookaround and backreferences are refused), and a
 * schema deeper than MAX_SCHEMA_DEPTH or larger than MAX_SCHEMA_CHARS is refused before ajv sees it.
 * A SchemaCompiler compiles each distinct schema once (keyed by its canonical hash) and removes from ajv
 * the ones its server no longer lists, so `tools/list_changed` refreshes do not grow memory.
 */
import { createHash } from 'node:crypto';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { RE2JS } from 're2js';
import { z } from 'zod';
import { canonicalJson } from '../loop/hash.js';

// ajv-formats is CommonJS: its default export arrives as the module object under some loaders.
const addFormats = ((addFormatsModule as { default?: unknown }).default ?? addFormatsModule) as unknown as (
  ajv: Ajv | Ajv2020,
) => void;

/** Deepest nesting of objects and arrays accepted in an input schema. */
export const MAX_SCHEMA_DEPTH = 32;
/** Largest input schema accepted, in characters of its JSON. */
export const MAX_SCHEMA_CHARS = 65_536;
/** Longest `pattern` (or `patternProperties` key) accepted. */
const MAX_PATTERN_CHARS = 1_000;
/**
 * Time one schema's patterns may take to compile in RE2 (`a{1000}` takes about 5 ms, and 64 KiB holds
 * thousands of them), and one listing's new schemas' patterns together; past it the schema is refused.
 * Only RE2's time counts, so a slow machine or a pause elsewhere does not refuse ordinary schemas.
 */
export const MAX_PATTERN_COMPILE_MS = 100;
export const MAX_LIST_COMPILE_MS = 1_000;

/** RE2 time spent on the schema being compiled, and its bound (ajv.compile is synchronous). */
let patternMs = 0;
let patternBudgetMs = Number.POSITIVE_INFINITY;
/** Set when the schema being compiled ran out of time: its refusal is not kept (a pause may be why). */
let patternsTimedOut = false;

/**
 * ajv's regular-expression engine: RE2 (linear time). ajv calls it while compiling, so a pattern RE2
 * refuses makes the compile fail with this message. `toString` is ajv's key for sharing a compiled
 * pattern inside one validator, so it names the pattern.
 */
function re2(pattern: string): { test(text: string): boolean; toString(): string } {
  if (pattern.length > MAX_PATTERN_CHARS) {
    throw new Error(`a pattern is longer than ${MAX_PATTERN_CHARS} characters`);
  }
  if (patternMs > patternBudgetMs) {
    patternsTimedOut = true;
    throw new Error(`its patterns take more than ${MAX_PATTERN_COMPILE_MS} ms to compile`);
  }
  let compiled: RE2JS;
  const began = performance.now();
  try {
    compiled = RE2JS.compile(RE2JS.translateRegExp(pattern));
  } catch (err) {
    throw new Error(
      `the pattern ${JSON.stringify(pattern.slice(0, 100))} is not supported by the linear-time engine (RE2: no lookaround or backreferences): ${(err as Error).message}`,
    );
  } finally {
    patternMs += performance.now() - began;
  }
  return { test: (text) => compiled.test(text), toString: () => `re2:${pattern}` };
}
// ajv asks how to write the engine into standalone code; loopgate never generates standalone code.
re2.code = 're2';

// strict: false: real servers use keywords ajv does not know (titles, examples, vendor keys); an invalid
// schema is still refused, because ajv checks every schema against its meta-schema before compiling.
const options = {
  strict: false,
  allErrors: true,
  validateFormats: true,
  code: { regExp: re2 },
} as const;

function makeAjv<T extends Ajv | Ajv2020>(ajv: T): T {
  addFormats(ajv);
  return ajv;
}

type CompiledSchema =
  | { ok: true; parameters: z.ZodType; validate: ValidateFunction }
  | { ok: false; reason: string };

const isDraft2020 = (schema: Record<string, unknown>) =>
  typeof schema.$schema === 'string' && schema.$schema.includes('2020-12');

function issuePath(error: ErrorObject): PropertyKey[] {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (error.keyword === 'required') path.push(String(error.params.missingProperty));
  if (error.keyword === 'additionalProperties') path.push(String(error.params.additionalProperty));
  return path;
}

function issueMessage(error: ErrorObject): string {
  if (error.keyword === 'additionalProperties') return 'is not a known property';
  if (error.keyword === 'required') return 'is required';
  return error.message ?? `fails ${error.keyword}`;
}

/** Why `schema` is too deep or too large to compile, or null. Never recurses past the bound. */
function schemaBoundProblem(schema: unknown): string | null {
  const tooDeep = (value: unknown, depth: number): boolean => {
    if (value === null || typeof value !== 'object') return false;
    if (depth > MAX_SCHEMA_DEPTH) return true;
    for (const v of Array.isArray(value) ? value : Object.values(value)) {
      if (tooDeep(v, depth + 1)) return true;
    }
    return false;
  };
  if (tooDeep(schema, 1)) return `its input schema nests deeper than ${MAX_SCHEMA_DEPTH} levels`;
  const chars = JSON.stringify(schema)?.length ?? 0;
  if (chars > MAX_SCHEMA_CHARS) {
    return `its input schema is ${chars} characters of JSON, more than ${MAX_SCHEMA_CHARS}`;
  }
  return null;
}

/** The cache key of a schema: the same schema, listed again, compiles once. */
function schemaKey(schema: unknown): string {
  return createHash('sha256')
    .update(canonicalJson(schema) ?? 'undefined')
    .digest('hex');
}

interface Entry {
  compiled: CompiledSchema;
  /** The object ajv holds the compiled schema under (for removeSchema); none for a refusal. */
  held?: { ajv: Ajv | Ajv2020; schema: Record<string, unknown> };
}

/** Compiles the input schemas of one server's tools, each distinct schema once. */
export class SchemaCompiler {
  private draft7: Ajv | undefined;
  private draft2020: Ajv2020 | undefined;
  private readonly entries = new Map<string, Entry>();
  /** RE2 time spent by the current listing's new schemas. */
  private listPatternMs = 0;

  /** A new listing of the server begins: its new schemas share MAX_LIST_COMPILE_MS of RE2 time. */
  startList(): void {
    this.listPatternMs = 0;
  }

  /** Compiles `schema`, or returns the compilation of an equal schema compiled before; never throws. */
  compile(schema: Record<string, unknown>): CompiledSchema & { key: string | null } {
    const bound = schemaBoundProblem(schema);
    if (bound) return { ok: false, reason: bound, key: null };
    const key = schemaKey(schema);
    let entry = this.entries.get(key);
    if (!entry) {
      // Not kept: the schema is compiled at a later listing, when this one's budget is not spent.
      if (this.listPatternMs > MAX_LIST_COMPILE_MS) {
        return {
          ok: false,
          reason: `not compiled: this listing's patterns took more than ${MAX_LIST_COMPILE_MS} ms to compile; tried again at the next listing`,
          key: null,
        };
      }
      patternsTimedOut = false;
      entry = this.compileNew(schema);
      if (patternsTimedOut) return { ...entry.compiled, key: null };
      this.entries.set(key, entry);
    }
    return { ...entry.compiled, key };
  }

  /** The cache key of `schema`, or null when it is out of bounds (never compiled). */
  keyOf(schema: Record<string, unknown>): string | null {
    return schemaBoundProblem(schema) ? null : schemaKey(schema);
  }

  /** Forgets, here and in ajv, every schema whose key is not in `keep` (the server's current list). */
  retain(keep: ReadonlySet<string>): void {
    for (const [key, entry] of this.entries) {
      if (keep.has(key)) continue;
      entry.held?.ajv.removeSchema(entry.held.schema);
      this.entries.delete(key);
    }
  }

  /** Distinct schemas compiled and kept, and schemas ajv holds (both flat while the list is unchanged). */
  stats(): { compiled: number; heldByAjv: number } {
    const held = (ajv: Ajv | Ajv2020 | undefined) =>
      ajv ? (ajv as unknown as { _cache: Map<unknown, unknown> })._cache.size : 0;
    return { compiled: this.entries.size, heldByAjv: held(this.draft7) + held(this.draft2020) };
  }

  private ajvFor(schema: Record<string, unknown>): Ajv | Ajv2020 {
    if (isDraft2020(schema)) {
      this.draft2020 ??= makeAjv(new Ajv2020(options));
      return this.draft2020;
    }
    this.draft7 ??= makeAjv(new Ajv(options));
    return this.draft7;
  }

  private compileNew(schema: Record<string, unknown>): Entry {
    const ajv = this.ajvFor(schema);
    let validate: ValidateFunction;
    patternMs = 0;
    patternBudgetMs = MAX_PATTERN_COMPILE_MS;
    try {
      validate = ajv.compile(schema);
    } catch (err) {
      // ajv registered the schema before compiling it: drop what is left of it.
      ajv.removeSchema(schema);
      return {
        compiled: {
          ok: false,
          reason: `its input schema is not valid JSON Schema: ${(err as Error).message}`,
        },
      };
    } finally {
      this.listPatternMs += patternMs;
      patternBudgetMs = Number.POSITIVE_INFINITY;
    }
    const held = { ajv, schema };
    if (schema.type !== 'object') {
      return {
        compiled: { ok: false, reason: 'its input schema does not describe an object (type: object)' },
        held,
      };
    }
    // zod reads `id` in metadata as a registry id; the model does not need it.
    const { id: _id, ...shown } = schema;
    const parameters = z
      .unknown()
      .superRefine((value, ctx) => {
        if (validate(value)) return;
        for (const error of validate.errors ?? []) {
          ctx.addIssue({ code: 'custom', path: issuePath(error), message: issueMessage(error) });
        }
      })
      .meta(shown);
    return { compiled: { ok: true, parameters, validate }, held };
  }
}

/** Compiles one schema on its own (draft-07 by default, 2020-12 when it says so); never throws. */
export function compileInputSchema(schema: Record<string, unknown>): CompiledSchema {
  const { key: _key, ...compiled } = new SchemaCompiler().compile(schema);
  return compiled as CompiledSchema;
}
