/**
 * What `check-config` and `loopgate mcp list` print about the policy's MCP servers: each server's state,
 * and each tool it lists with the effect loopgate applies and why (override, annotation or default), or
 * why it is refused. Servers are connected for the listing and closed right after; nothing is called.
 */
import type { ConfigProblem } from '../config/errors.js';
import type { Policy } from '../config/policy.js';
import type { Logger } from '../loop/tool-contract.js';
import { memoryCallDefinitions } from '../mcp/call-definitions.js';
import { McpSource, type ServerReport, type ToolRow } from '../mcp/mcp-source.js';
import { shorten } from './format.js';

interface McpListing {
  servers: Record<string, ServerReport>;
  tools: ToolRow[];
  /** Servers that could not be reached and tools taking another tool's name. */
  problems: ConfigProblem[];
}

const quiet: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => quiet,
};

export async function listMcpTools(
  policy: Policy,
  env: Readonly<Record<string, string | undefined>>,
  reserved: ReadonlySet<string>,
): Promise<McpListing> {
  const source = new McpSource({
    settings: policy.mcp,
    env,
    logger: quiet,
    definitions: memoryCallDefinitions(),
    reserved,
  });
  try {
    await source.start();
    const servers = source.report();
    const unreachable = Object.entries(servers)
      .filter(([, s]) => s.state !== 'connected')
      .map(([name, s]) => ({
        key: `mcp.servers.${name}`,
        problem: `could not connect: ${s.error ?? s.state}`,
      }));
    return { servers, tools: source.rows(), problems: [...unreachable, ...source.collisions()] };
  } finally {
    await source.close();
  }
}

export function mcpListingText(listing: McpListing): string {
  const names = Object.keys(listing.servers);
  if (names.length === 0) return '';
  const lines = [`  MCP servers (${names.length}):`];
  for (const name of names) {
    const s = listing.servers[name];
    if (!s) continue;
    lines.push(
      s.state === 'connected'
        ? `    ${name}: connected, ${s.tools} tools listed, version ${s.version ?? '-'}`
        : `    ${name}: ${s.state}${s.error ? ` (${shorten(s.error, 200)})` : ''}`,
    );
    if (s.cut > 0) {
      lines.push(
        `    note: ${s.cut} of ${name}'s tools are cut (not offered to the model): the MCP tools together passed mcp.maxTools or mcp.maxToolChars`,
      );
    }
    for (const row of listing.tools.filter((r) => r.server === name)) {
      lines.push(
        row.decision && row.refused === null
          ? `      ${row.name.padEnd(40)} ${row.decision.effect.padEnd(6)} ${row.decision.source}: ${row.decision.why}`
          : `      ${row.name.padEnd(40)} refused: ${shorten(row.refused ?? '', 300)}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}
