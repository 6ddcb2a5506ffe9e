/**
 * Overhead of an MCP read call over stdio, beyond the server's own time. Goal (issue 12): p50 <= 1 ms.
 *
 * A local server (bench/_mcp-echo-server.ts, one `echo` tool) is called the way a worker calls it: the
 * engine's prepareCall (JSON parse, ajv validation against the server's schema) then executeCall (timeout,
 * definition check, the SDK client over stdio, result mapping, bounding). Printed per call, p50/p90/p99:
 *   loopgate   the whole path above
 *   sdk        a bare SDK client.callTool on a second connection to the same kind of server (the
 *              protocol's own cost: JSON-RPC over two pipes, both SDKs)
 *   server     the tool handler's own time, as the server measured it
 * and the overheads: loopgate - server (the goal's figure) and loopgate - sdk (what loopgate adds).
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { executeCall } from '../src/loop/execute.js';
import { prepareCall } from '../src/loop/prepare.js';
import { createRun } from '../src/loop/state.js';
import type { Logger } from '../src/loop/tool-contract.js';
import { memoryCallDefinitions } from '../src/mcp/call-definitions.js';
import { McpSource } from '../src/mcp/mcp-source.js';
import { mcpSettings } from '../src/mcp/settings.js';
import { callLimits } from '../test/support/call-limits.js';

const N = Number(process.env.BENCH_N ?? 3000);
const WARMUP = 300;
const logger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => logger };
const tsx = fileURLToPath(new URL('../node_modules/.bin/tsx', import.meta.url));
const server = fileURLToPath(new URL('./_mcp-echo-server.ts', import.meta.url));

const source = new McpSource({
  settings: mcpSettings.parse({ servers: { bench: { command: [tsx, server] } } }),
  env: process.env,
  logger,
  definitions: memoryCallDefinitions(),
  reserved: new Set(),
});
await source.start();
const tools = source.tools();
const state = createRun({
  runId: 'bench',
  requester: { userId: 'U1' },
  systemPrompt: 's',
  question: 'q',
  limits: {},
  now: Date.now(),
});

const raw = new Client({ name: 'bench', version: '1' });
await raw.connect(new StdioClientTransport({ command: tsx, args: [server], stderr: 'ignore' }));

const viaLoopgate = async (i: number) => {
  const prepared = prepareCall(
    { id: `c${i}`, name: 'bench__echo', arguments: `{"text":"hello ${i}","n":${i}}` },
    tools,
    state,
  );
  if (prepared.kind !== 'read') throw new Error(`unexpected ${prepared.kind}`);
  const { result } = await executeCall(
    prepared.tool,
    prepared.args,
    { runId: 'bench', toolCallId: `c${i}`, requester: { userId: 'U1' }, logger },
    callLimits(30_000, 16_000),
  );
  if (!result.ok) throw new Error(JSON.stringify(result));
  return (result.data as { structuredContent: { serverMs: number } }).structuredContent.serverMs;
};
const viaSdk = async (i: number) => {
  await raw.callTool({ name: 'echo', arguments: { text: `hello ${i}`, n: i } });
};

const loopgate: number[] = [];
const sdk: number[] = [];
const serverMs: number[] = [];
for (let i = 0; i < WARMUP + N; i++) {
  // Interleaved, so drift in machine load hits both paths alike.
  let t = performance.now();
  const own = await viaLoopgate(i);
  const a = performance.now() - t;
  t = performance.now();
  await viaSdk(i);
  const b = performance.now() - t;
  if (i >= WARMUP) {
    loopgate.push(a);
    sdk.push(b);
    serverMs.push(own);
  }
}
await source.close();
await raw.close();

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
const row = (name: string, xs: number[]) =>
  `${name.padEnd(22)} p50 ${pct(xs, 50).toFixed(3)} ms   p90 ${pct(xs, 90).toFixed(3)} ms   p99 ${pct(xs, 99).toFixed(3)} ms`;
const minus = (xs: number[], ys: number[]) => xs.map((x, i) => x - (ys[i] ?? 0));
console.log(`MCP read call over stdio, ${N} calls (after ${WARMUP} warm-up), interleaved`);
console.log(row('loopgate (whole path)', loopgate));
console.log(row('bare SDK callTool', sdk));
console.log(row('server handler', serverMs));
console.log(row('loopgate - server', minus(loopgate, serverMs)));
console.log(row('loopgate - bare SDK', minus(loopgate, sdk)));
console.log(
  `goal: loopgate - server p50 <= 1 ms: ${pct(minus(loopgate, serverMs), 50) <= 1 ? 'met' : 'NOT met'}`,
);
