/**
 * `loopgate mcp list` and `loopgate check-config` connect to the policy's MCP servers (the real
 * server-filesystem and a test server with a broken schema) and print each tool with the effect loopgate
 * applies and why; an unreachable server or a name collision is a problem (exit 1).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bin, misbehaving } from '../mcp/support.js';
import { emptyWorkDir, runCli } from './cli-harness.js';

const work = emptyWorkDir();
afterAll(() => work.remove());
const files = join(work.dir, 'files');
mkdirSync(files);

const write = (name: string, servers: Record<string, unknown>) => {
  const path = join(work.dir, name);
  const yaml = [
    'approvals: { approvers: [U0MGR] }',
    'tools: { current_time: {} }',
    `mcp: ${JSON.stringify({ servers })}`,
  ];
  writeFileSync(path, `${yaml.join('\n')}\n`);
  return path;
};

const good = write('good.yaml', {
  fs: { command: [bin('mcp-server-filesystem'), files], tools: { move_file: { effect: 'notify' } } },
  odd: { command: misbehaving('bad-schema') },
});

describe('loopgate mcp list', { timeout: 40_000 }, () => {
  it('prints each server and tool with the effect and its reason, and refused tools with theirs', async () => {
    const result = await runCli(['mcp', 'list', good], {}, work.dir);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const out = result.stdout;
    expect(out).toMatch(
      /^ {2}MCP servers \(2\):\n {4}fs: connected, 14 tools listed, version [0-9a-f]{16}\n/,
    );
    expect(out).toMatch(/\n {6}fs__read_text_file\s+read\s+annotation: readOnlyHint: true\n/);
    expect(out).toMatch(/\n {6}fs__write_file\s+write\s+annotation: readOnlyHint: false\n/);
    expect(out).toMatch(/\n {6}fs__move_file\s+notify\s+override: mcp.servers.fs.tools.move_file.effect\n/);
    expect(out).toMatch(/\n {6}odd__echo\s+read\s+annotation: readOnlyHint: true\n/);
    expect(out).toMatch(/\n {6}odd__broken\s+refused: its input schema is not valid JSON Schema/);
  });

  it('--json lists servers, tools and problems', async () => {
    const result = await runCli(['mcp', 'list', good, '--json'], {}, work.dir);
    const listing = JSON.parse(result.stdout) as {
      servers: Record<string, { state: string }>;
      tools: unknown[];
    };
    expect(listing.servers.fs?.state).toBe('connected');
    expect(listing.tools).toContainEqual(
      expect.objectContaining({ name: 'odd__broken', decision: null, refused: expect.any(String) }),
    );
  });

  it('an unreachable server and a tool with a built-in’s name are problems: exit 1', async () => {
    const bad = write('bad.yaml', {
      gone: { command: [join(work.dir, 'no-such-server')] },
      clash: { command: misbehaving('collide') },
    });
    const result = await runCli(['mcp', 'list', bad], {}, work.dir);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('loopgate: mcp.servers.gone: could not connect: spawn');
    expect(result.stderr).toContain(
      'loopgate: mcp.servers.clash: its tool current_time takes the name of the tool current_time',
    );
    const check = await runCli(['check-config', bad], {}, work.dir);
    expect(check.code).toBe(1);
    expect(check.stderr).toContain(`invalid configuration in ${bad}:\n  mcp.servers.gone: could not connect`);
  });
});

describe('loopgate check-config with MCP servers', { timeout: 40_000 }, () => {
  it('prints the summary, then the MCP tools with their effects', async () => {
    const result = await runCli(['check-config', good], {}, work.dir);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`OK: ${good}\n`);
    expect(result.stdout).toMatch(/\n {6}fs__write_file\s+write\s+annotation: readOnlyHint: false\n/);
  });
});
