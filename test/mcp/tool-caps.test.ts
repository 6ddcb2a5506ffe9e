/**
 * Item 14 of issue 21: the MCP tools offered to the model are capped in number (`mcp.maxTools`) and in
 * size (`mcp.maxToolChars`: names, descriptions and input schemas together), in the order of
 * `mcp.servers` and of each server's list. Tools past a cap are cut: not offered, logged by server, and
 * noted by `loopgate mcp list`. Real stdio servers: test/mcp/servers/misbehaving-server.ts, mode `many`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mcpListingText } from '../../src/cli/mcp-report.js';
import type { McpSource } from '../../src/mcp/mcp-source.js';
import { misbehaving, startSource, waitFor } from './support.js';

const open: McpSource[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

const start = async (settings: Record<string, unknown>) => {
  const { servers, ...caps } = settings;
  const started = await startSource(servers as Record<string, unknown>, { caps });
  open.push(started.source);
  return started;
};

describe('MCP tools offered to the model are capped', { timeout: 40_000 }, () => {
  it('mcp.maxTools: the first tools in server and list order are offered, the rest cut, logged and noted', async () => {
    const { source, logger } = await start({
      maxTools: 20,
      servers: { first: { command: misbehaving('many') }, second: { command: misbehaving('plain') } },
    });
    // On a loaded machine a server may miss its first attempt and connect on a retry.
    await waitFor('both servers to list their tools', () =>
      Object.values(source.report()).every((s) => s.state === 'connected' && s.version !== null),
    );
    const offered = [...source.tools().keys()];
    expect(offered).toHaveLength(20);
    expect(offered.slice(0, 3)).toEqual(['first__echo', 'first__t00', 'first__t01']);
    expect(offered).not.toContain('second__echo');
    const cut = source.rows().filter((r) => r.refused?.startsWith('cut:'));
    expect(cut.map((r) => r.name)).toEqual([
      ...Array.from({ length: 11 }, (_, i) => `first__t${String(i + 19).padStart(2, '0')}`),
      'second__echo',
    ]);
    expect(cut[0]?.refused).toBe('cut: the MCP tools offered to the model are capped at mcp.maxTools (20)');
    expect(source.report().first).toMatchObject({ state: 'connected', tools: 31, cut: 11 });
    expect(source.report().second).toMatchObject({ tools: 1, cut: 1 });
    const warned = logger.lines.filter((l) => l.level === 'warn').map((l) => l.msg);
    expect(warned).toContain(
      'MCP server first: 11 of its 31 tools are not offered to the model (MCP tools capped at mcp.maxTools 20 and mcp.maxToolChars 200000); loopgate mcp list names them',
    );
    const text = mcpListingText({ servers: source.report(), tools: source.rows(), problems: [] });
    expect(text).toContain(
      "    note: 11 of first's tools are cut (not offered to the model): the MCP tools together passed mcp.maxTools or mcp.maxToolChars",
    );
    expect(text).toMatch(
      /first__t19 +refused: cut: the MCP tools offered to the model are capped at mcp.maxTools \(20\)/,
    );
    expect(text).toMatch(/first__t18 +read /);
  });

  it('mcp.maxToolChars: tools are offered until their names, descriptions and schemas pass the bound', async () => {
    const { source } = await start({
      maxToolChars: 3_000,
      servers: { many: { command: misbehaving('many') } },
    });
    const offered = source.tools().size;
    expect(offered).toBeGreaterThan(5);
    expect(offered).toBeLessThan(31);
    expect(source.report().many?.cut).toBe(31 - offered);
    expect(source.rows().find((r) => r.refused !== null)?.refused).toBe(
      'cut: the MCP tools offered to the model are capped at mcp.maxToolChars (3000 characters of names, descriptions and input schemas)',
    );
    // What is offered fits the bound as the model is sent it.
    const sent = [...source.tools().values()].reduce(
      (sum, t) =>
        sum + t.name.length + t.description.length + JSON.stringify(t.parameters.meta?.() ?? {}).length,
      0,
    );
    expect(sent).toBeLessThanOrEqual(3_000);
  });

  it('with the defaults (100 tools, 200,000 characters) a server of 31 tools is offered whole', async () => {
    const { source } = await start({ servers: { many: { command: misbehaving('many') } } });
    expect(source.tools().size).toBe(31);
    expect(source.report().many?.cut).toBe(0);
  });
});
