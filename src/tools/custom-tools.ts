/**
 * Loads operator-written tools: each module listed under `custom:` exports a tool (default export or a
 * named `tool`) with the same contract as the built-ins. Anything wrong stops start-up with an error
 * naming the file. TypeScript modules need a TypeScript-aware runtime (tsx, or Node with type stripping);
 * compiled `.js` modules work everywhere.
 */
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { ConfigError } from '../config/errors.js';
import type { AnyTool } from '../loop/types.js';

/** OpenAI function names: letters, digits, `_` and `-`, at most 64. */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

const fn = z.custom<(...args: unknown[]) => unknown>((v) => typeof v === 'function', {
  error: 'expected a function',
});

/** A zod schema, recognised by shape so a module using its own copy of zod still passes. */
const zodSchema = z.custom<z.ZodType>(
  (v) =>
    v !== null &&
    typeof v === 'object' &&
    '_zod' in v &&
    typeof (v as { safeParse?: unknown }).safeParse === 'function',
  { error: 'expected a zod schema' },
);

const toolShape = z.object({
  name: z.string().regex(TOOL_NAME, { error: 'expected letters, digits, _ or - (at most 64)' }),
  description: z.string().min(1, { error: 'expected a description the model reads' }),
  parameters: zodSchema,
  effect: z.enum(['read', 'write', 'notify']),
  execute: fn,
  preview: fn.optional(),
  verify: fn.optional(),
  timeoutMs: z.number().int().positive().optional(),
  idempotent: z.boolean().optional(),
  retry: z
    .object({
      attempts: z.number().int().min(1).max(10),
      initialDelayMs: z.number().int().min(0),
      maxDelayMs: z.number().int().min(0),
    })
    .optional(),
});

function fail(file: string, problem: string): never {
  throw new ConfigError(file, [{ key: 'custom tool', problem }]);
}

/** The model receives `parameters` as a JSON Schema object, so it must convert to `type: object`. */
function checkParameters(file: string, parameters: z.ZodType): void {
  let schema: Record<string, unknown>;
  try {
    schema = z.toJSONSchema(parameters, { io: 'input' }) as Record<string, unknown>;
  } catch (err) {
    fail(file, `parameters cannot be turned into JSON Schema: ${(err as Error).message}`);
  }
  if (schema.type !== 'object') fail(file, 'parameters must be a z.object(...) schema');
}

/** Imports one module and returns its validated tool. */
export async function loadCustomTool(file: string): Promise<AnyTool> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const hint =
      code === 'ERR_UNKNOWN_FILE_EXTENSION'
        ? ' (a .ts module needs a TypeScript-aware runtime such as tsx; or compile it to .js)'
        : '';
    fail(file, `cannot import it: ${(err as Error).message}${hint}`);
  }
  const exported = mod.default ?? mod.tool;
  if (exported === undefined)
    fail(file, 'exports no tool (export default defineTool({...}) or export const tool)');
  const parsed = toolShape.safeParse(exported);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((i) => `${i.path.join('.') || 'export'}: ${i.message}`)
      .join('; ');
    fail(file, `does not export a valid tool: ${problems}`);
  }
  checkParameters(file, parsed.data.parameters);
  return exported as AnyTool;
}
