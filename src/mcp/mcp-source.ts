/**
 * Every MCP server of the policy, as one source of tools for a worker (and for `check-config` and
 * `loopgate mcp list`): connects them all at start-up (one that fails is reported by name and retried in
 * the background; the others serve), turns each listed tool into a loopgate tool or a refusal with its
 * reason, and tells its listeners when a server's list changed so the worker swaps its registry.
 */
import type { ConfigProblem } from '../config/errors.js';
import type { AnyTool, Logger } from '../loop/tool-contract.js';
import { TOOL_NAME } from '../tools/custom-tools.js';
import type { Env } from '../tools/settings.js';
import type { CallDefinitions } from './call-definitions.js';
import { type ListedTool, ServerConnection, type ServerStatus } from './connection.js';
import { definitionHash, listVersion } from './definition.js';
import { decideEffect, type EffectDecision } from './effect.js';
import { SchemaCompiler } from './input-schema.js';
import { createMcpTool, describeTool } from './mcp-tool.js';
import type { RunCancelled } from './run-cancelled.js';
import {
  DEFAULT_MAX_TOOL_CHARS,
  DEFAULT_MAX_TOOLS,
  type McpServerSettings,
  type McpSettings,
  ownValue,
} from './settings.js';

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
  /** Tools not offered to the model because the MCP tools together passed mcp.maxTools or maxToolChars. */
  cut: number;
}

interface McpSourceOptions {
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
  /** Characters each tool adds to a model request: its name, description and input schema. */
  sizes: Map<string, number>;
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
  /** Per server: its tools' input schemas, each compiled once while the server lists it. */
  private readonly schemas = new Map<string, SchemaCompiler>();
  /** Served tools not offered to the model (over the caps), by name, with why. */
  private cut = new Map<string, string>();

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

  /** Each server's tools in the order of mcp.servers, whichever server connected first. */
  private builtInOrder(): ServerTools[] {
    return [...this.connections.keys()].flatMap((name) => this.built.get(name) ?? []);
  }

  /** The tools served now, by name (those past the caps left out). */
  tools(): Map<string, AnyTool> {
    return new Map(
      this.builtInOrder().flatMap((b) =>
        b.tools.filter((t) => !this.cut.has(t.name)).map((t) => [t.name, t] as const),
      ),
    );
  }

  rows(): ToolRow[] {
    return this.builtInOrder().flatMap((b) =>
      b.rows.map((r) => {
        const cut = r.refused === null ? this.cut.get(r.name) : undefined;
        return cut ? { ...r, refused: cut } : r;
      }),
    );
  }

  report(): Record<string, ServerReport> {
    return Object.fromEntries(
      [...this.connections].map(([name, c]) => {
        const built = this.built.get(name);
        const hashes = built?.hashes;
        const cut = built?.tools.filter((t) => this.cut.has(t.name)).length ?? 0;
        return [name, { ...c.status(), version: hashes ? listVersion([...hashes.values()]) : null, cut }];
      }),
    );
  }

  /** Tools whose names collide with other tools: the worker refuses to start with these. */
  collisions(): ConfigProblem[] {
    return this.rows()
      .filter((r) => r.collision)
      .map((r) => ({ key: `mcp.servers.${r.server}`, problem: r.refused ?? 'name collision' }));
  }

  /** Fetches every connected server's list again, as `tools/list_changed` does. */
  async refresh(): Promise<void> {
    await Promise.all([...this.connections.values()].map((c) => c.refresh()));
  }

  /** Input schemas compiled and held for `server` (flat while its list is unchanged). */
  schemaStats(server: string): { compiled: number; heldByAjv: number } {
    return this.schemas.get(server)?.stats() ?? { compiled: 0, heldByAjv: 0 };
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
    const built: ServerTools = { tools: [], rows: [], hashes: new Map(), sizes: new Map() };
    const taken = new Set(this.options.reserved);
    for (const other of this.built.keys()) {
      if (other !== server) for (const t of this.built.get(other)?.tools ?? []) taken.add(t.name);
    }
    let compiler = this.schemas.get(server);
    if (!compiler) {
      compiler = new SchemaCompiler();
      this.schemas.set(server, compiler);
    }
    compiler.startList();
    // Stale schemas leave ajv first: a redefined schema keeping its `$id` would otherwise clash.
    compiler.retain(
      new Set(listed.map((t) => compiler.keyOf(t.inputSchema)).filter((k): k is string => k !== null)),
    );
    const used = new Set<string>();
    for (const tool of listed) {
      const row = this.buildOne(server, settings, tool, taken, built, connection, compiler, used);
      built.rows.push(row);
    }
    // Schemas of tools the server no longer lists (or that changed) are freed, here and in ajv.
    compiler.retain(used);
    const before = this.built.get(server);
    this.built.set(server, built);
    this.applyCaps();
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

  /**
   * Offers the served tools in the order of mcp.servers and of each server's list until the next one
   * would pass mcp.maxTools or mcp.maxToolChars; the rest are cut (not offered), and each server whose
   * cut tools changed is logged, so an operator sees which tools the model no longer gets.
   */
  private applyCaps(): void {
    const maxTools = this.options.settings?.maxTools ?? DEFAULT_MAX_TOOLS;
    const maxChars = this.options.settings?.maxToolChars ?? DEFAULT_MAX_TOOL_CHARS;
    const cut = new Map<string, string>();
    let count = 0;
    let chars = 0;
    let full: string | null = null;
    for (const server of this.connections.keys()) {
      const built = this.built.get(server);
      for (const tool of built?.tools ?? []) {
        const size = built?.sizes.get(tool.name) ?? 0;
        if (full === null && count + 1 > maxTools) {
          full = `cut: the MCP tools offered to the model are capped at mcp.maxTools (${maxTools})`;
        } else if (full === null && chars + size > maxChars) {
          full = `cut: the MCP tools offered to the model are capped at mcp.maxToolChars (${maxChars} characters of names, descriptions and input schemas)`;
        }
        if (full !== null) {
          cut.set(tool.name, full);
          continue;
        }
        count += 1;
        chars += size;
      }
    }
    for (const [server, built] of this.built) {
      const names = (map: Map<string, string>) =>
        built.tools
          .filter((t) => map.has(t.name))
          .map((t) => t.name)
          .join(',');
      const now = names(cut);
      if (now === names(this.cut)) continue;
      const cutNames = built.tools.filter((t) => cut.has(t.name)).map((t) => t.name);
      if (cutNames.length === 0) {
        this.options.logger.info({ server }, `MCP server ${server}: all its tools are offered again`);
      } else {
        this.options.logger.warn(
          { server, cut: cutNames, maxTools, maxToolChars: maxChars },
          `MCP server ${server}: ${cutNames.length} of its ${built.tools.length} tools are not offered to the model (MCP tools capped at mcp.maxTools ${maxTools} and mcp.maxToolChars ${maxChars}); loopgate mcp list names them`,
        );
      }
    }
    this.cut = cut;
  }

  private buildOne(
    server: string,
    settings: McpServerSettings,
    listed: ListedTool,
    taken: Set<string>,
    built: ServerTools,
    connection: ServerConnection,
    compiler: SchemaCompiler,
    used: Set<string>,
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
    const compiled = compiler.compile(listed.inputSchema);
    if (compiled.key !== null) used.add(compiled.key);
    if (!compiled.ok) return refusedRow(server, listed, compiled.reason);
    const hash = definitionHash(listed);
    const decision = decideEffect(server, listed.name, listed.annotations, settings);
    const own = ownValue(settings.tools, listed.name);
    const timeoutMs = (own?.timeoutSeconds ?? settings.timeoutSeconds) * 1000;
    taken.add(name);
    built.hashes.set(listed.name, hash);
    built.sizes.set(
      name,
      name.length +
        describeTool(server, listed.description).length +
        JSON.stringify(listed.inputSchema).length,
    );
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
