/**
 * Every MCP server of the policy, as one source of tools for a worker (and for `check-config` and
 * `loopgate mcp list`): connects them all at start-up (one that fails is reported by name and retried in
 * the background; the others serve), turns each listed tool into a loopgate tool or a refusal with its
 * reason, and tells its listeners when a server's list changed so the worker swaps its registry.
 */
import type { ConfigProblem } from '../config/errors.js';
import type { AnyTool, Logger } from '../loop/types.js';
import { TOOL_NAME } from '../tools/custom-tools.js';
import type { Env } from '../tools/settings.js';
import type { CallDefinitions } from './call-definitions.js';
import { type ListedTool, ServerConnection, type ServerStatus } from './connection.js';
import { definitionHash, listVersion } from './definition.js';
import { decideEffect, type EffectDecision } from './effect.js';
import { compileInputSchema } from './input-schema.js';
import { createMcpTool } from './mcp-tool.js';
import type { RunCancelled } from './run-cancelled.js';
import { type McpServerSettings, type McpSettings, ownValue } from './settings.js';

/** One listed tool as `mcp list` prints it: served with its effect and why, or refused and why. */
export interface ToolRow {
  server: string;
  /** The tool's name on the server. */
  tool: string;
  /** The name the model sees. */
  name: string;
  annotations: Record<string, unknown> | null;
  decision: EffectDecision | null;
  /** Why the tool is not offered; null when it is. */
  refused: string | null;
  /** True when the refusal is a name taken by another tool (a start-up error). */
  collision: boolean;
}

export interface ServerReport extends ServerStatus {
  /** Hash of the served tools' definitions: changes whenever one of them does. */
  version: string | null;
}

export interface McpSourceOptions {
  settings: McpSettings | undefined;
  env: Env;
  logger: Logger;
  definitions: CallDefinitions;
  /** Whether a run was cancelled (reads in flight are then cancelled on the server); default never. */
  runCancelled?: RunCancelled;
  /** Names of the built-in and custom tools: a server tool taking one of them is refused. */
  reserved: ReadonlySet<string>;
  backoff?: { minMs: number; maxMs: number };
  connectTimeoutMs?: number;
}

interface ServerTools {
  tools: AnyTool[];
  rows: ToolRow[];
  hashes: Map<string, string>;
}

const refusedRow = (server: string, listed: ListedTool, refused: string, collision = false): ToolRow => ({
  server,
  tool: listed.name,
  name: `${server}__${listed.name}`,
  annotations: listed.annotations ?? null,
  decision: null,
  refused,
  collision,
});

export class McpSource {
  private readonly connections = new Map<string, ServerConnection>();
  private readonly built = new Map<string, ServerTools>();
  private readonly listeners: Array<() => void> = [];

  constructor(private readonly options: McpSourceOptions) {
    for (const [name, settings] of Object.entries(options.settings?.servers ?? {})) {
      this.connections.set(
        name,
        new ServerConnection({
          name,
          settings,
          env: options.env,
          logger: options.logger,
          onTools: (tools) => this.update(name, settings, tools),
          ...(options.backoff ? { backoff: options.backoff } : {}),
          ...(options.connectTimeoutMs ? { connectTimeoutMs: options.connectTimeoutMs } : {}),
        }),
      );
    }
  }

  /** Connects every server; resolves when each one connected or failed its first attempt. */
  async start(): Promise<void> {
    await Promise.all([...this.connections.values()].map((c) => c.start()));
    for (const [name, c] of this.connections) {
      const s = c.status();
      if (s.state !== 'connected') {
        this.options.logger.error(
          { server: name, error: s.error },
          `MCP server ${name} is unavailable: its tools are not offered until it connects`,
        );
      }
    }
  }

  /** The tools served now, by name. */
  tools(): Map<string, AnyTool> {
    return new Map([...this.built.values()].flatMap((b) => b.tools.map((t) => [t.name, t] as const)));
  }

  rows(): ToolRow[] {
    return [...this.built.values()].flatMap((b) => b.rows);
  }

  report(): Record<string, ServerReport> {
    return Object.fromEntries(
      [...this.connections].map(([name, c]) => {
        const hashes = this.built.get(name)?.hashes;
        return [name, { ...c.status(), version: hashes ? listVersion([...hashes.values()]) : null }];
      }),
    );
  }

  /** Tools whose names collide with other tools: the worker refuses to start with these. */
  collisions(): ConfigProblem[] {
    return this.rows()
      .filter((r) => r.collision)
      .map((r) => ({ key: `mcp.servers.${r.server}`, problem: r.refused ?? 'name collision' }));
  }

  /** `fn` runs after any server's list changed (tools added, removed or redefined). */
  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }

  async close(): Promise<void> {
    await Promise.all([...this.connections.values()].map((c) => c.close()));
  }

  private update(server: string, settings: McpServerSettings, listed: ListedTool[]): void {
    const connection = this.connections.get(server);
    if (!connection) return;
    const built: ServerTools = { tools: [], rows: [], hashes: new Map() };
    const taken = new Set(this.options.reserved);
    for (const other of this.built.keys()) {
      if (other !== server) for (const t of this.built.get(other)?.tools ?? []) taken.add(t.name);
    }
    for (const tool of listed) {
      const row = this.buildOne(server, settings, tool, taken, built, connection);
      built.rows.push(row);
    }
    const before = this.built.get(server);
    this.built.set(server, built);
    const changed =
      !before || listVersion([...before.hashes.values()]) !== listVersion([...built.hashes.values()]);
    if (changed) {
      this.options.logger.info(
        {
          server,
          tools: built.tools.map((t) => t.name),
          refused: built.rows.filter((r) => r.refused).length,
        },
        'MCP tool list loaded',
      );
      for (const fn of this.listeners) fn();
    }
  }

  private buildOne(
    server: string,
    settings: McpServerSettings,
    listed: ListedTool,
    taken: Set<string>,
    built: ServerTools,
    connection: ServerConnection,
  ): ToolRow {
    const name = `${server}__${listed.name}`;
    if (settings.allow && !settings.allow.includes(listed.name)) {
      return refusedRow(server, listed, `not in mcp.servers.${server}.allow`);
    }
    if (settings.deny.includes(listed.name))
      return refusedRow(server, listed, `in mcp.servers.${server}.deny`);
    if (!TOOL_NAME.test(name)) {
      return refusedRow(
        server,
        listed,
        `${name} is not a usable tool name (letters, digits, _ or -, at most 64)`,
      );
    }
    if (this.options.reserved.has(listed.name) || taken.has(name)) {
      const clash = this.options.reserved.has(listed.name) ? listed.name : name;
      return refusedRow(
        server,
        listed,
        `its tool ${listed.name} takes the name of the tool ${clash} loopgate already has; deny it (mcp.servers.${server}.deny) or rename it on the server`,
        true,
      );
    }
    const compiled = compileInputSchema(listed.inputSchema);
    if (!compiled.ok) return refusedRow(server, listed, compiled.reason);
    const hash = definitionHash(listed);
    const decision = decideEffect(server, listed.name, listed.annotations, settings);
    const own = ownValue(settings.tools, listed.name);
    const timeoutMs = (own?.timeoutSeconds ?? settings.timeoutSeconds) * 1000;
    taken.add(name);
    built.hashes.set(listed.name, hash);
    built.tools.push(
      createMcpTool({
        server,
        listed,
        parameters: compiled.parameters,
        decision,
        hash,
        timeoutMs,
        idempotent: own?.idempotent === true,
        currentHash: () => this.built.get(server)?.hashes.get(listed.name),
        call: (args, signal, ms) => connection.call(listed.name, args, signal, ms),
        definitions: this.options.definitions,
        ...(this.options.runCancelled ? { runCancelled: this.options.runCancelled } : {}),
      }),
    );
    return {
      server,
      tool: listed.name,
      name,
      annotations: listed.annotations ?? null,
      decision,
      refused: null,
      collision: false,
    };
  }
}
