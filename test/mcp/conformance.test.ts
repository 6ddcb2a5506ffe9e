import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * @modelcontextprotocol/conformance's client scenarios against loopgate's MCP client
 * (test/mcp/conformance-client.ts). The kit needs Node >= 22 (fs.globSync), so these run in CI's Node 24
 * pass and are skipped on Node 20. Elicitation and OAuth scenarios are out of scope: loopgate answers no
 * elicitation requests and sends static headers from the environment.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));
const major = Number(process.versions.node.split('.')[0]);
const SCENARIOS = ['initialize', 'tools_call', 'sse-retry'];

function runScenario(scenario: string): Promise<string> {
  const client = `"${process.execPath}" --import tsx test/mcp/conformance-client.ts`;
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        'node_modules/@modelcontextprotocol/conformance/dist/index.js',
        'client',
        '--command',
        client,
        '--scenario',
        scenario,
      ],
      { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d) => {
      out += String(d);
    });
    child.stderr.on('data', (d) => {
      out += String(d);
    });
    child.on('error', reject);
    child.on('exit', () => resolve(out));
  });
}

describe.skipIf(major < 22)('MCP conformance kit, client scenarios (Node >= 22)', () => {
  it.each(SCENARIOS)('%s passes', { timeout: 90_000 }, async (scenario) => {
    const out = await runScenario(scenario);
    expect(out, out).toContain('OVERALL: PASSED');
    expect(out).not.toMatch(/\bFAILURE\b/);
  });
});
