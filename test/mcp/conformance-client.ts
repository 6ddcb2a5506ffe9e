/**
 * loopgate's MCP client for @modelcontextprotocol/conformance's client scenarios (run by test/mcp/conformance.test.ts on Node >= 22:
 * the kit uses fs.globSync): `conformance client --command "tsx test/mcp/conformance-client.ts"
 * --scenario <name>`. The kit appends the server URL and names the scenario in MCP_CONFORMANCE_SCENARIO.
 * It connects through McpSource as a worker does, then calls each tool through the engine's executeCall,
 * with arguments a model would send for the scenario's tools.
 */
import { executeCall } from '../../src/loop/execute.js';
import { memoryCallDefinitions } from '../../src/mcp/call-definitions.js';
import { McpSource } from '../../src/mcp/mcp-source.js';
import { mcpSettings } from '../../src/mcp/settings.js';
import { callLimits } from '../support/call-limits.js';
import { recordingLogger } from './support.js';

const url = process.argv.at(-1) ?? '';
const ARGS: Record<string, unknown> = { add_numbers: { a: 2, b: 3 } };
const logger = recordingLogger();
const source = new McpSource({
  // Read: these scenario tools are called without an approval, so the client's calls reach the server.
  settings: mcpSettings.parse({ servers: { conf: { url, effect: 'read' } } }),
  env: process.env,
  logger,
  definitions: memoryCallDefinitions(),
  reserved: new Set(),
});
await source.start();
const report = source.report().conf;
console.log(JSON.stringify({ scenario: process.env.MCP_CONFORMANCE_SCENARIO, report }));
for (const row of source.rows()) {
  const tool = source.tools().get(row.name);
  if (!tool) continue;
  const { result } = await executeCall(
    tool,
    ARGS[row.tool] ?? {},
    { runId: 'conformance', toolCallId: row.tool, requester: { userId: 'U1' }, logger },
    callLimits(20_000, 16_000),
  );
  console.log(JSON.stringify({ tool: row.name, result }));
}
await source.close();
process.exit(report?.state === 'connected' ? 0 : 1);
