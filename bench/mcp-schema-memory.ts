/**
 * Memory of MCP tool list refreshes (issue 21 item 8). A stdio server with 31 tools, each with its own
 * input schema (test/mcp/servers/misbehaving-server.ts, mode `many`), has its unchanged list fetched
 * again N times, as `tools/list_changed` makes a worker do. Printed: heap after a full GC before and after
 * the N refreshes, the growth per refresh, the schemas compiled and those ajv holds (both should not move).
 * BENCH_N sets N (default 1000). Run with `node --expose-gc --import tsx bench/mcp-schema-memory.ts` for
 * exact figures; without --expose-gc the flag is set at start.
 */
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from '../src/loop/tool-contract.js';
import { memoryCallDefinitions } from '../src/mcp/call-definitions.js';
import { McpSource } from '../src/mcp/mcp-source.js';
import { mcpSettings } from '../src/mcp/settings.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const N = Number(process.env.BENCH_N ?? 1000);
const logger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => logger };
const tsx = fileURLToPath(new URL('../node_modules/.bin/tsx', import.meta.url));
const server = fileURLToPath(new URL('../test/mcp/servers/misbehaving-server.ts', import.meta.url));

const source = new McpSource({
  settings: mcpSettings.parse({ servers: { many: { command: [tsx, server, 'many'] } } }),
  env: process.env,
  logger,
  definitions: memoryCallDefinitions(),
  reserved: new Set(),
});
await source.start();
const heap = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};
const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(2);

for (let i = 0; i < 20; i++) await source.refresh();
const before = heap();
const statsBefore = source.schemaStats('many');
const started = performance.now();
for (let i = 0; i < N; i++) await source.refresh();
const ms = performance.now() - started;
const after = heap();
const statsAfter = source.schemaStats('many');
console.log(`tools: ${source.tools().size}, refreshes: ${N} (${(ms / N).toFixed(2)} ms each)`);
console.log(`heap after GC: before ${mib(before)} MiB, after ${mib(after)} MiB`);
console.log(
  `growth: ${mib(after - before)} MiB total, ${((after - before) / N / 1024).toFixed(2)} KiB per refresh`,
);
console.log(
  `schemas compiled: ${statsBefore.compiled} -> ${statsAfter.compiled}; held by ajv: ${statsBefore.heldByAjv} -> ${statsAfter.heldByAjv}`,
);
await source.close();
