/**
 * The policy's `mcp:` section: MCP servers whose tools loopgate offers the model, each reached over stdio
 * (`command`) or Streamable HTTP (`url`), with the overrides that decide how their tools are gated.
 * Secrets come only from the environment: `envFromEnv` (variables of a stdio server) and `headersEnv`
 * (HTTP headers) name environment variables, checked to exist when the policy loads.
 */
import { z } from 'zod';
import type { ConfigProblem } from '../config/errors.js';
import { envVarName, headersEnv, seconds, serviceUrl, toolApprovers } from '../tools/settings.js';

/** Server names make the first part of `<server>__<tool>`, so they cannot contain `__`. */
export const SERVER_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_)){0,23}$/;

const effect = z.enum(['read', 'write', 'notify'], { error: 'expected read, write or notify' });

const toolNameList = z.array(z.string().min(1), { error: 'expected a list of the server’s tool names' });

/** Per-tool overrides, keyed by the tool's name on the server (not the `<server>__` name). */
const toolOverride = z.strictObject({
  effect: effect.optional(),
  approvers: toolApprovers.optional(),
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
    /** Only these tools are offered (default: all the server lists). */
    allow: toolNameList.optional(),
    /** These tools are never offered. */
    deny: toolNameList.default([]),
    /** false: every tool of the server is a write whatever its annotations say (unless overridden). */
    trustAnnotations: z.boolean({ error: 'expected true or false' }).default(true),
    /** stdio: the largest message read from the server; a bigger reply drops the connection. */
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

export const mcpSettings = z.strictObject({
  servers: z.record(
    z.string().regex(SERVER_NAME, {
      error: 'expected a server name of letters, digits, - or single _ (at most 24)',
    }),
    serverSettings,
  ),
});

export type McpSettings = z.output<typeof mcpSettings>;
export type McpServerSettings = z.output<typeof serverSettings>;
export type McpToolOverride = z.output<typeof toolOverride>;

/** A server that may serve write tools, or a tool made a write, needs someone to approve its calls. */
export function mcpApproverProblems(
  settings: McpSettings | undefined,
  defaultApprovers: readonly string[],
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

/** Own approvers of `<server>__<tool>`: the tool's, else the server's; undefined when neither is set. */
export function mcpApprovers(settings: McpSettings | undefined, toolName: string): string[] | undefined {
  const at = toolName.indexOf('__');
  if (!settings || at <= 0) return undefined;
  const server = ownValue(settings.servers, toolName.slice(0, at));
  if (!server) return undefined;
  return ownValue(server.tools, toolName.slice(at + 2))?.approvers ?? server.approvers;
}

/** `record[key]` for own keys only: a tool named `constructor` must not find Object.prototype's. */
export function ownValue<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
