/**
 * The policy's `mcp:` section: MCP servers whose tools loopgate offers the model, each reached over stdio
 * (`command`) or Streamable HTTP (`url`), with the overrides that decide how their tools are gated.
 * Secrets come only from the environment: `envFromEnv` (variables of a stdio server) and `headersEnv`
 * (HTTP headers) name environment variables, checked to exist when the policy loads.
 */
import { z } from 'zod';
import { type ApproverEntry, toolApprovers } from '../approvers/approvers.js';
import type { ConfigProblem } from '../config/errors.js';
import { envVarName, headersEnv, seconds, serviceUrl, toolMode } from '../tools/settings.js';

/**
 * Server names make the first part of `<server>__<tool>`, so they cannot contain `__`; names that make
 * the split ambiguous (`db` beside `db_`) are refused together (`ambiguousServerNames`).
 */
export const SERVER_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_)){0,23}$/;

const effect = z.enum(['read', 'write', 'notify'], { error: 'expected read, write or notify' });

const toolNameList = z.array(z.string().min(1), { error: 'expected a list of the server’s tool names' });

/** Per-tool overrides, keyed by the tool's name on the server (not the `<server>__` name). */
const toolOverride = z.strictObject({
  effect: effect.optional(),
  approvers: toolApprovers.optional(),
  /** `shadow`: this tool's gated calls never run (docs/approvals.md, "Shadow mode"). */
  mode: toolMode.optional(),
  /** Only the operator can declare a tool safe to run again after a crash (`idempotentHint` is not enough). */
  idempotent: z.boolean({ error: 'expected true or false' }).optional(),
  timeoutSeconds: seconds(3600).optional(),
});

const serverSettings = z
  .strictObject({
    /** stdio: the program and its first arguments, e.g. `[npx, -y, "@modelcontextprotocol/server-filesystem@2026.8.31"]`. */
    command: z
      .array(z.string().min(1), { error: 'expected the program and its arguments as a list' })
      .min(1, { error: 'expected at least the program' })
      .optional(),
    args: z.array(z.string(), { error: 'expected a list of arguments' }).optional(),
    /** Working directory of a stdio server, relative to the policy file. */
    cwd: z.string().min(1).optional(),
    /** stdio: variables the server gets, each from a variable of loopgate's environment. */
    envFromEnv: z.record(envVarName, envVarName).optional(),
    /** Streamable HTTP: the server's endpoint. */
    url: serviceUrl.optional(),
    headersEnv: headersEnv.optional(),
    /** One effect for every tool of the server (a tool's own `effect` still wins). */
    effect: effect.optional(),
    approvers: toolApprovers.optional(),
    /** `shadow`: the server's gated calls never run (a tool's own `mode` wins). */
    mode: toolMode.optional(),
    /** Only these tools are offered (default: all the server lists). */
    allow: toolNameList.optional(),
    /** These tools are never offered. */
    deny: toolNameList.default([]),
    /** false: every tool of the server is a write whatever its annotations say (unless overridden). */
    trustAnnotations: z.boolean({ error: 'expected true or false' }).default(true),
    /** The largest message read from the server (stdio: a line; HTTP: a JSON body or one event); a bigger reply drops the connection. */
    maxReplyBytes: z
      .number({ error: 'expected a number of bytes' })
      .int({ error: 'expected a whole number of bytes' })
      .min(65_536, { error: 'expected at least 65536 bytes' })
      .max(268_435_456, { error: 'expected at most 268435456 bytes' })
      .default(33_554_432),
    /** Per-call timeout of the server's tools. */
    timeoutSeconds: seconds(3600).default(30),
    tools: z.record(z.string().min(1), toolOverride).default({}),
  })
  .superRefine((s, ctx) => {
    if ((s.command === undefined) === (s.url === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [],
        message: 'expected either command (a stdio server) or url (a Streamable HTTP server), not both',
      });
    }
    const only = (keys: Array<keyof typeof s>, kind: string) => {
      for (const key of keys) {
        if (s[key] !== undefined) {
          ctx.addIssue({ code: 'custom', path: [key], message: `only for ${kind}` });
        }
      }
    };
    if (s.url !== undefined) only(['args', 'cwd', 'envFromEnv'], 'a stdio server (command)');
    if (s.command !== undefined) only(['headersEnv'], 'a Streamable HTTP server (url)');
  });

/** Default caps on the MCP tools offered to the model (all servers together). */
export const DEFAULT_MAX_TOOLS = 100;
export const DEFAULT_MAX_TOOL_CHARS = 200_000;

export const mcpSettings = z.strictObject({
  /** At most this many MCP tools are offered to the model, in the order of `servers` and their lists. */
  maxTools: z
    .number({ error: 'expected a number of tools' })
    .int({ error: 'expected a whole number of tools' })
    .min(1, { error: 'expected at least 1' })
    .max(1_000, { error: 'expected at most 1000' })
    .default(DEFAULT_MAX_TOOLS),
  /** ...and their names, descriptions and input schemas together are at most this many characters. */
  maxToolChars: z
    .number({ error: 'expected a number of characters' })
    .int({ error: 'expected a whole number of characters' })
    .min(1_000, { error: 'expected at least 1000' })
    .max(4_000_000, { error: 'expected at most 4000000' })
    .default(DEFAULT_MAX_TOOL_CHARS),
  servers: z
    .record(
      z.string().regex(SERVER_NAME, {
        error: 'expected a server name of letters, digits, - or single _ (at most 24)',
      }),
      serverSettings,
    )
    .superRefine((servers, ctx) => {
      for (const [longer, shorter] of ambiguousServerNames(Object.keys(servers))) {
        ctx.addIssue({
          code: 'custom',
          path: [longer],
          message: `ambiguous beside the server ${shorter}: ${longer}__x could be ${longer}'s tool x or ${shorter}'s tool _x; rename one of them`,
        });
      }
    }),
});

/**
 * Pairs `[longer, shorter]` of server names whose tool names can coincide. `<a>__<t>` equals `<b>__<u>`
 * (a shorter) only when `<b>__` starts with `<a>__`; a name holds no `__`, so that is when b is a + `_`
 * (`db` and `db_`: `db___x`). Without such pairs a tool name starts with at most one `<server>__`.
 */
function ambiguousServerNames(names: readonly string[]): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (const longer of names) {
    const shorter = longer.slice(0, -1);
    if (longer.endsWith('_') && names.includes(shorter)) pairs.push([longer, shorter]);
  }
  return pairs;
}

export type McpSettings = z.output<typeof mcpSettings>;
export type McpServerSettings = z.output<typeof serverSettings>;

/** A server that may serve write tools, or a tool made a write, needs someone to approve its calls. */
export function mcpApproverProblems(
  settings: McpSettings | undefined,
  defaultApprovers: readonly unknown[],
): ConfigProblem[] {
  if (!settings || defaultApprovers.length > 0) return [];
  const problems: ConfigProblem[] = [];
  for (const [name, s] of Object.entries(settings.servers)) {
    if (s.approvers === undefined && s.effect !== 'read') {
      problems.push({
        key: 'approvals.approvers',
        problem: `required: MCP server ${name} may serve write tools and has no approvers of its own (mcp.servers.${name}.approvers)`,
      });
      continue;
    }
    for (const [tool, o] of Object.entries(s.tools)) {
      if (
        o.effect !== undefined &&
        o.effect !== 'read' &&
        o.approvers === undefined &&
        s.approvers === undefined
      ) {
        problems.push({
          key: `mcp.servers.${name}.tools.${tool}.approvers`,
          problem: `required: the tool is a ${o.effect} and nobody may approve it (or set approvals.approvers)`,
        });
      }
    }
  }
  return problems;
}

/**
 * The configured server and its tool that the model's name `<server>__<tool>` stands for, resolved
 * against the configured names (not split at the first `__`: server `db_` serves `db___drop_table`, and a
 * tool's own name may hold `__`). The longest match wins; ambiguous names are refused when the policy
 * loads (`ambiguousServerNames`), so at most one matches. `<server>__` alone resolves with tool ''.
 */
export function resolveMcpTool(
  settings: McpSettings | undefined,
  toolName: string,
): { server: string; settings: McpServerSettings; tool: string } | undefined {
  let best: string | undefined;
  for (const name of Object.keys(settings?.servers ?? {})) {
    if (toolName.startsWith(`${name}__`) && (best === undefined || name.length > best.length)) best = name;
  }
  const server = best === undefined ? undefined : ownValue(settings?.servers ?? {}, best);
  if (best === undefined || !server) return undefined;
  return { server: best, settings: server, tool: toolName.slice(best.length + 2) };
}

/** Own approvers of `<server>__<tool>`: the tool's, else the server's; undefined when neither is set. */
export function mcpApprovers(
  settings: McpSettings | undefined,
  toolName: string,
): ApproverEntry[] | undefined {
  const resolved = resolveMcpTool(settings, toolName);
  if (!resolved) return undefined;
  return ownValue(resolved.settings.tools, resolved.tool)?.approvers ?? resolved.settings.approvers;
}

/** The `mode` set for an MCP tool `<server>__<tool>`: the tool's own, else its server's; undefined: none. */
export function mcpMode(
  settings: McpSettings | undefined,
  toolName: string,
): 'enforce' | 'shadow' | undefined {
  const at = toolName.indexOf('__');
  if (!settings || at <= 0) return undefined;
  const server = ownValue(settings.servers, toolName.slice(0, at));
  if (!server) return undefined;
  return ownValue(server.tools, toolName.slice(at + 2))?.mode ?? server.mode;
}

/** `record[key]` for own keys only: a tool named `constructor` must not find Object.prototype's. */
export function ownValue<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
