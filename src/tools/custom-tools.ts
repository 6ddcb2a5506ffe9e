/**
 * Loads operator-written tools: each module listed under `custom:` (a file, or a package from the
 * project's node_modules) exports one tool or several (the default export, a default list, and every
 * named export shaped like a tool). Each tool is checked, its declared secrets read from the environment,
 * and wrapped so that it receives the public context (src/tools/custom/context.ts) and its failures keep
 * their code whichever copy of `loopgate` the module imported. Anything wrong stops start-up with an error
 * naming the file. A `.ts` module loads only where a TypeScript loader is present (Node's own type
 * stripping, tsx registered at start, or tsx installed in the tool's project); `.js` modules work everywhere.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { ConfigError } from '../config/errors.js';
import type { AnyTool } from '../loop/tool-contract.js';
import { customContext } from './custom/context.js';
import { sameCopyFailure } from './custom/errors.js';
import type { AnyCustomTool } from './custom/tool-api.js';
import type { AllowRule } from './net/guarded-request.js';
import { type Lookup, systemLookup } from './net/lookup.js';

/** OpenAI function names: letters, digits, `_` and `-`, at most 64. */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** A POSIX environment variable name. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

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
  secrets: z.array(z.string().regex(ENV_NAME, { error: 'expected an environment variable name' })).optional(),
  execute: fn,
  preview: fn.optional(),
  verify: fn.optional(),
  plan: fn.optional(),
  samePlan: fn.optional(),
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
function checkParameters(file: string, name: string, parameters: z.ZodType): void {
  let schema: Record<string, unknown>;
  try {
    schema = z.toJSONSchema(parameters, { io: 'input' }) as Record<string, unknown>;
  } catch (err) {
    fail(file, `${name}: parameters cannot be turned into JSON Schema: ${(err as Error).message}`);
  }
  if (schema.type !== 'object') fail(file, `${name}: parameters must be a z.object(...) schema`);
}

/** Looks like a tool (rather than a helper the module also exports): has `execute` and `parameters`. */
const toolLike = (v: unknown): boolean =>
  v !== null && typeof v === 'object' && 'execute' in v && 'parameters' in v;

/** The tools a module exports, each once: default (one or a list), then named exports shaped like tools. */
function exportedTools(file: string, mod: Record<string, unknown>): unknown[] {
  const found: unknown[] = [];
  const add = (v: unknown) => {
    if (!found.includes(v)) found.push(v);
  };
  if (Array.isArray(mod.default)) mod.default.forEach(add);
  else if (mod.default !== undefined) add(mod.default);
  for (const [key, value] of Object.entries(mod)) {
    if (key !== 'default' && (key === 'tool' || toolLike(value))) add(value);
  }
  if (found.length === 0) {
    fail(file, 'exports no tool (export default defineTool({...}), a list of tools, or named tools)');
  }
  return found;
}

/** Checks one tool object as `custom:` modules are checked. @throws ConfigError naming `file` */
export function checkedTool(file: string, exported: unknown): AnyCustomTool {
  const parsed = toolShape.safeParse(exported);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((i) => `${i.path.join('.') || 'export'}: ${i.message}`)
      .join('; ');
    fail(file, `does not export a valid tool: ${problems}`);
  }
  checkParameters(file, parsed.data.name, parsed.data.parameters);
  return exported as AnyCustomTool;
}

const TS_FILE = /\.[cm]?ts$/;

/**
 * Registers tsx's loader when the project that holds `file` has tsx installed (listed in its package.json),
 * so a `.ts` tool loads under plain node; true when it did. loopgate itself runs compiled and never needs it.
 */
async function registerProjectTsx(file: string): Promise<boolean> {
  let hooks: string;
  try {
    // `tsx/esm` registers tsx's ESM hooks when imported (what `node --import tsx/esm` does).
    hooks = createRequire(file).resolve('tsx/esm');
  } catch {
    return false;
  }
  await import(pathToFileURL(hooks).href);
  return true;
}

/**
 * Node 20 does not know `.ts`; Node 22.18+ and 24 strip types themselves but refuse syntax that is
 * more than annotations (enums, namespaces, parameter properties). Either way tsx can still load it.
 */
const NEEDS_TS_LOADER = new Set(['ERR_UNKNOWN_FILE_EXTENSION', 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX']);

async function importModule(file: string): Promise<Record<string, unknown>> {
  const href = pathToFileURL(file).href;
  try {
    return (await import(href)) as Record<string, unknown>;
  } catch (err) {
    if (!TS_FILE.test(file) || !NEEDS_TS_LOADER.has((err as NodeJS.ErrnoException).code ?? '')) throw err;
    if (!(await registerProjectTsx(file))) {
      throw new Error(
        `${(err as Error).message} (a .ts tool needs a TypeScript loader: install tsx in the project, start node with --import tsx, or compile the tool to .js)`,
      );
    }
    // A new URL: the loader keeps the failed import of the plain one.
    return (await import(`${href}?loader=tsx`)) as Record<string, unknown>;
  }
}

/** Imports one module and returns its validated tools, as their author wrote them. */
export async function loadCustomModule(file: string): Promise<AnyCustomTool[]> {
  let mod: Record<string, unknown>;
  try {
    mod = await importModule(file);
  } catch (err) {
    fail(file, `cannot import it: ${(err as Error).message}`);
  }
  const tools = exportedTools(file, mod).map((t) => checkedTool(file, t));
  const names = tools.map((t) => t.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice) fail(file, `exports two tools named ${twice}`);
  return tools;
}

type Env = Readonly<Record<string, string | undefined>>;

/** The declared secrets of `tool` that are unset or empty in `env`. */
export function missingSecrets(tool: AnyCustomTool, env: Env): string[] {
  return (tool.secrets ?? []).filter((name) => env[name] === undefined || env[name] === '');
}

interface WrapOptions {
  env: Env;
  /** The operator's allowlist for this module's `ctx.http` (none: every URL is refused). */
  rules?: readonly AllowRule[];
  lookup?: Lookup;
}

/**
 * The engine's view of a custom tool: each call's context gains `secret()` and `http`, and a failure
 * thrown with another copy of loopgate's error classes keeps its code. Secrets are read here, once.
 */
export function wrapCustomTool(tool: AnyCustomTool, options: WrapOptions): AnyTool {
  const secrets = new Map(
    (tool.secrets ?? []).flatMap((name) => (options.env[name] ? [[name, options.env[name]]] : [])),
  );
  const source = {
    tool: tool.name,
    secrets,
    rules: options.rules ?? [],
    lookup: options.lookup ?? systemLookup,
  };
  const guarded = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      throw sameCopyFailure(err);
    }
  };
  const { preview, verify, plan, samePlan } = tool;
  return {
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    effect: tool.effect,
    ...(tool.timeoutMs === undefined ? {} : { timeoutMs: tool.timeoutMs }),
    ...(tool.idempotent === undefined ? {} : { idempotent: tool.idempotent }),
    ...(tool.retry === undefined ? {} : { retry: tool.retry }),
    execute: (args, ctx) => guarded(() => tool.execute(args, customContext(ctx, source))),
    ...(preview && {
      preview: (args: unknown, ctx) => guarded(() => preview(args, customContext(ctx, source))),
    }),
    ...(verify && {
      verify: (args: unknown, result: unknown, ctx) =>
        guarded(() => verify(args, result, customContext(ctx, source))),
    }),
    ...(plan && { plan: (args: unknown, ctx) => guarded(() => plan(args, customContext(ctx, source))) }),
    ...(samePlan && { samePlan: (a: string, b: string) => samePlan(a, b) }),
  };
}
