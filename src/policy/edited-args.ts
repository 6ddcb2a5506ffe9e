/**
 * Checks arguments an approver edited against the tool's JSON Schema (kept on the approval), in the bot,
 * so the Edit form can say at once what is wrong. Defaults the schema declares are filled in, as the
 * tool's own schema would fill them, so the hash the approval binds is that of the arguments that will
 * run. The worker checks them again with the tool's own schema before running (src/loop/decisions.ts).
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { argsHash } from '../loop/hash.js';

/** Longest edited arguments taken, as JSON: what a card can show in full elsewhere (see shown-arguments). */
const MAX_EDITED_JSON = 20_000;

// Formats are the tool's own business (its schema checks them again in the worker); ajv would only warn.
const options = { strict: false, allErrors: true, useDefaults: true, validateFormats: false } as const;
const draft7 = new Ajv(options);
const draft2020 = new Ajv2020(options);
const compiled = new Map<string, ValidateFunction>();

function validatorFor(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) {
    const ajv = typeof schema.$schema === 'string' && schema.$schema.includes('2020-12') ? draft2020 : draft7;
    validate = ajv.compile(schema);
    if (compiled.size >= 200) compiled.clear();
    compiled.set(key, validate);
  }
  return validate;
}

type EditedCheck =
  | { ok: true; args: unknown; argsHash: string }
  | { ok: false; problems: Array<{ pointer: string; message: string }> };

export function checkEditedArgs(schema: Record<string, unknown>, edited: unknown): EditedCheck {
  const args = structuredClone(edited);
  let validate: ValidateFunction;
  try {
    validate = validatorFor(schema);
  } catch (err) {
    return {
      ok: false,
      problems: [{ pointer: '', message: `the tool's schema cannot be checked (${(err as Error).message})` }],
    };
  }
  if (!validate(args)) {
    return {
      ok: false,
      problems: (validate.errors ?? []).slice(0, 10).map((e) => ({
        pointer: e.instancePath,
        message: `${e.instancePath.replaceAll('/', '.').slice(1) || 'arguments'} ${e.message ?? 'is not valid'}${e.keyword === 'additionalProperties' ? ` (${String(e.params.additionalProperty)})` : ''}${e.keyword === 'enum' ? ` (${(e.params.allowedValues as unknown[]).join(', ')})` : ''}`,
      })),
    };
  }
  const json = JSON.stringify(args);
  if (json.length > MAX_EDITED_JSON) {
    return {
      ok: false,
      problems: [
        {
          pointer: '',
          message: `the edited arguments are ${json.length} characters of JSON; at most ${MAX_EDITED_JSON}`,
        },
      ],
    };
  }
  return { ok: true, args, argsHash: argsHash(args) };
}
