/** Starting real MCP servers for tests through loopgate's own McpSource, and reading what it logged. */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from '../../src/loop/tool-contract.js';
import { type CallDefinitions, memoryCallDefinitions } from '../../src/mcp/call-definitions.js';
import { McpSource } from '../../src/mcp/mcp-source.js';
import type { RunCancelled } from '../../src/mcp/run-cancelled.js';
import { type McpSettings, mcpSettings } from '../../src/mcp/settings.js';

const root = resolve(import.meta.dirname, '../..');
export const bin = (name: string) => resolve(root, 'node_modules/.bin', name);
/**
 * The command of test/mcp/servers/misbehaving-server.ts with its modes: Node with tsx's loader rather
 * than the tsx CLI, one process instead of two, which a loaded machine starts within the connect timeout.
 */
export const misbehaving = (modes: string, file = '', holdMs?: number) => [
  process.execPath,
  '--import',
  pathToFileURL(resolve(root, 'node_modules/tsx/dist/loader.mjs')).href,
  resolve(root, 'test/mcp/servers/misbehaving-server.ts'),
  modes,
  ...(file || holdMs !== undefined ? [file || '-'] : []),
  ...(holdMs !== undefined ? [String(holdMs)] : []),
];

export interface LogLine {
  level: string;
  msg: string;
  obj: Record<string, unknown>;
}

export function recordingLogger(lines: LogLine[] = []): Logger & { lines: LogLine[] } {
  const at =
    (level: string) =>
    (obj: object, msg = '') => {
      lines.push({ level, msg, obj: obj as Record<string, unknown> });
    };
  const logger: Logger & { lines: LogLine[] } = {
    lines,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: () => logger,
  };
  return logger;
}

export interface Started {
  source: McpSource;
  logger: ReturnType<typeof recordingLogger>;
  definitions: CallDefinitions;
}

/** Parses `servers` as the policy would (defaults filled in) and starts a source on them. */
export async function startSource(
  servers: Record<string, unknown>,
  options: {
    reserved?: string[];
    env?: Record<string, string>;
    runCancelled?: RunCancelled;
    /** Other keys of the `mcp:` section (maxTools, maxToolChars). */
    caps?: Record<string, unknown>;
  } = {},
): Promise<Started> {
  const settings: McpSettings = mcpSettings.parse({ ...options.caps, servers });
  const logger = recordingLogger();
  const definitions = memoryCallDefinitions();
  const source = new McpSource({
    settings,
    env: { ...process.env, ...options.env },
    logger,
    definitions,
    reserved: new Set(options.reserved ?? []),
    backoff: { minMs: 50, maxMs: 500 },
    ...(options.runCancelled ? { runCancelled: options.runCancelled } : {}),
  });
  await source.start();
  return { source, logger, definitions };
}

/** Polls until `probe` is truthy (bounded). */
export async function waitFor<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs = 15_000,
): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
