/**
 * The forms in which a tool's JSON Schema is offered to a model server. loopgate validates every argument
 * itself against the tool's full zod schema, so what the server sees is guidance, never enforcement: a
 * form may drop what a server mishandles without letting anything weaker run.
 *
 * - `standard`: the schema zod makes, as it is.
 * - `lenient`: without string length, pattern and format limits, which grammar-constrained servers
 *   mishandle (llama.cpp's server refuses every request whose schema has `maxLength: 2000`, and ignores
 *   limits above it). Everything else stays.
 * - `strict`: OpenAI's strict mode (`strict: true`): every object lists all its properties as required,
 *   optional ones become nullable, `additionalProperties: false`, keywords strict mode refuses dropped.
 *   A tool whose schema cannot take that shape (a record with free keys) is sent without `strict`.
 *   Because optional properties became nullable, a `null` the model sends for one of them is read back
 *   as "absent" (`fromStrictArguments`) before loopgate validates it.
 *
 * Pure: no I/O, no SDK. Results are cached per schema object, so a run's requests carry byte-identical
 * tool lists (a stable prefix the server can cache).
 */
import type { ToolSchema } from './model-port.js';

export const SCHEMA_FORMS = ['standard', 'strict', 'lenient'] as const;
export type SchemaForm = (typeof SCHEMA_FORMS)[number];

/** A tool as offered in one form: `strict` is set only when the strict form could be made exactly. */
export interface FormedTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  strict?: true;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Keywords a grammar-constrained server mishandles; dropped by the lenient form. */
const LENIENT_DROPS = new Set(['minLength', 'maxLength', 'pattern', 'format']);
/** Keywords OpenAI's strict mode refuses (its documented subset allows none of these). */
const STRICT_DROPS = new Set(['minLength', 'maxLength', 'default', 'propertyNames', 'minProperties']);

/** Applies `visit` to every subschema (post-order), rebuilding the tree; the input is never changed. */
function mapSchema(schema: unknown, visit: (s: Json) => Json): unknown {
  if (Array.isArray(schema)) return schema.map((s) => mapSchema(s, visit));
  if (!isObject(schema)) return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'properties' && isObject(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapSchema(v, visit)]));
    } else if (
      key === 'items' ||
      key === 'additionalProperties' ||
      key === 'anyOf' ||
      key === 'oneOf' ||
      key === 'allOf' ||
      key === 'prefixItems' ||
      key === 'not' ||
      key === 'propertyNames'
    ) {
      out[key] = mapSchema(value, visit);
    } else if ((key === '$defs' || key === 'definitions') && isObject(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapSchema(v, visit)]));
    } else {
      out[key] = value;
    }
  }
  return visit(out);
}

const without = (s: Json, drops: ReadonlySet<string>): Json =>
  Object.fromEntries(Object.entries(s).filter(([k]) => !drops.has(k)));

/** The lenient form of one parameters schema. */
export function lenientParameters(parameters: Json): Json {
  return mapSchema(parameters, (s) => without(s, LENIENT_DROPS)) as Json;
}

/** Whether `s` already accepts null. */
function allowsNull(s: Json): boolean {
  if (s.type === 'null') return true;
  if (Array.isArray(s.type) && s.type.includes('null')) return true;
  const options = (s.anyOf ?? s.oneOf) as unknown;
  return Array.isArray(options) && options.some((o) => isObject(o) && allowsNull(o));
}

function nullable(s: Json): Json {
  if (allowsNull(s)) return s;
  if (typeof s.type === 'string' && s.enum === undefined && s.const === undefined) {
    return { ...s, type: [s.type, 'null'] };
  }
  return { anyOf: [s, { type: 'null' }] };
}

/**
 * The strict form of one parameters schema, or null when it cannot be made exactly (an object whose
 * extra keys are free, such as a record: strict mode requires `additionalProperties: false`).
 */
export function strictParameters(parameters: Json): Json | null {
  let exact = true;
  const formed = mapSchema(parameters, (raw) => {
    const s = without(raw, STRICT_DROPS);
    const isObjectSchema = s.type === 'object' || isObject(s.properties);
    if (!isObjectSchema) return s;
    if (s.additionalProperties !== undefined && s.additionalProperties !== false) {
      const props = s.properties;
      // An empty `{}`/`true` beside named properties is zod's loose object: strict mode narrows it.
      if (!isObject(props) || Object.keys(props).length === 0) exact = false;
    }
    const properties = isObject(s.properties) ? s.properties : {};
    const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
    const strictProps = Object.fromEntries(
      Object.entries(properties).map(([k, v]) => [k, required.has(k) || !isObject(v) ? v : nullable(v)]),
    );
    return {
      ...s,
      type: 'object',
      properties: strictProps,
      required: Object.keys(strictProps),
      additionalProperties: false,
    };
  });
  return exact ? (formed as Json) : null;
}

const caches: Record<SchemaForm, WeakMap<ToolSchema, FormedTool>> = {
  standard: new WeakMap(),
  strict: new WeakMap(),
  lenient: new WeakMap(),
};

/** One tool in `form`; the same object for the same schema and form (byte-identical requests). */
export function formTool(tool: ToolSchema, form: SchemaForm): FormedTool {
  const cache = caches[form];
  const hit = cache.get(tool);
  if (hit) return hit;
  let formed: FormedTool;
  if (form === 'lenient') {
    formed = {
      name: tool.name,
      description: tool.description,
      parameters: lenientParameters(tool.parameters),
    };
  } else if (form === 'strict') {
    const strict = strictParameters(tool.parameters);
    formed = strict
      ? { name: tool.name, description: tool.description, parameters: strict, strict: true }
      : // Not representable in strict mode: offered like the lenient form, so strict mode's keyword
        // limits do not refuse it either.
        { name: tool.name, description: tool.description, parameters: lenientParameters(tool.parameters) };
  } else {
    formed = { name: tool.name, description: tool.description, parameters: tool.parameters };
  }
  cache.set(tool, formed);
  return formed;
}

/**
 * Arguments the model sent for a tool offered in the strict form, read back in the shape of the full
 * schema: a `null` for a property that was optional and not nullable there means "absent" and is
 * removed. Anything else is left for loopgate's own validation to judge. Text that is not JSON is
 * returned unchanged (validation reports it).
 */
export function fromStrictArguments(original: Json, args: string): string {
  let value: unknown;
  try {
    value = JSON.parse(args);
  } catch {
    return args;
  }
  let changed = false;
  const walk = (schema: unknown, v: unknown): unknown => {
    if (!isObject(schema)) return v;
    if (Array.isArray(v) && schema.items !== undefined) return v.map((x) => walk(schema.items, x));
    if (!isObject(v) || !isObject(schema.properties)) return v;
    const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
    const out: Json = {};
    for (const [k, x] of Object.entries(v)) {
      const sub = schema.properties[k];
      if (x === null && !required.has(k) && isObject(sub) && !allowsNull(sub)) {
        changed = true;
        continue;
      }
      out[k] = walk(sub, x);
    }
    return out;
  };
  const read = walk(original, value);
  return changed ? JSON.stringify(read) : args;
}

/**
 * Whether a refusal from a model server is about the tools' schemas (so another form may be accepted):
 * a 400 whose words name the grammar, a schema, the tools or their parameters. A refusal for length
 * (context exceeded) is not.
 */
export function isSchemaRefusal(status: number | undefined, message: string, code?: string | null): boolean {
  if (status !== 400) return false;
  if (code === 'invalid_function_parameters') return true;
  if (/context length|context window|maximum context|prompt is too long|too many tokens/i.test(message)) {
    return false;
  }
  return /grammar|schema|\btools?\b|tools\[|function|parameters/i.test(message);
}

/**
 * The form to use per endpoint and model, once a server refused the configured one. One memory is shared
 * by the whole process (`sharedSchemaMemory`), so every run and worker port learns from the first
 * refusal; tests make their own.
 */
export class SchemaFormMemory {
  readonly #forms = new Map<string, SchemaForm>();

  /** The remembered form for `key`, else `configured`. */
  formFor(key: string, configured: SchemaForm): SchemaForm {
    return this.#forms.get(key) ?? configured;
  }

  /** Remembers `form` for `key`; true when this is news (the caller logs it once). */
  remember(key: string, form: SchemaForm): boolean {
    if (this.#forms.get(key) === form) return false;
    this.#forms.set(key, form);
    return true;
  }
}

export const sharedSchemaMemory = new SchemaFormMemory();
