/**
 * A server's JSON Schema for a tool's input, compiled once with ajv and wrapped as the zod `parameters`
 * the engine expects: `safeParse` runs the compiled validator (so a bad argument is an
 * `invalid_arguments` result before any gating), and the schema itself rides along as zod metadata, so
 * the model is sent the server's schema unchanged. A schema ajv refuses makes the tool unusable.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { z } from 'zod';

// ajv-formats is CommonJS: its default export arrives as the module object under some loaders.
const addFormats = ((addFormatsModule as { default?: unknown }).default ?? addFormatsModule) as unknown as (
  ajv: Ajv | Ajv2020,
) => void;

function makeAjv<T extends Ajv | Ajv2020>(ajv: T): T {
  addFormats(ajv);
  return ajv;
}

// strict: false: real servers use keywords ajv does not know (titles, examples, vendor keys); an invalid
// schema is still refused, because ajv checks every schema against its meta-schema before compiling.
const options = { strict: false, allErrors: true, validateFormats: true } as const;
const draft7 = makeAjv(new Ajv(options));
const draft2020 = makeAjv(new Ajv2020(options));

export type CompiledSchema =
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

/** Compiles `schema` (draft-07 by default, 2020-12 when it says so); never throws. */
export function compileInputSchema(schema: Record<string, unknown>): CompiledSchema {
  const ajv = isDraft2020(schema) ? draft2020 : draft7;
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (err) {
    return { ok: false, reason: `its input schema is not valid JSON Schema: ${(err as Error).message}` };
  }
  if (schema.type !== 'object') {
    return { ok: false, reason: 'its input schema does not describe an object (type: object)' };
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
  return { ok: true, parameters, validate };
}
