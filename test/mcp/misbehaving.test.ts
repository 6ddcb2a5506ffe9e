/**
 * Servers that misbehave, built in test/mcp/servers: one that never answers (a timeout result, and the
 * server receives notifications/cancelled), one that dies mid-call (a failed result, then a reconnect),
 * one that answers 10 MB (bounded), one whose schema is not JSON Schema (that tool refused, the others
 * served), one that takes a built-in's name (a start-up error), and one that cannot start at all.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { executeCall } from '../../src/loop/execute.js';
import type { McpSource } from '../../src/mcp/mcp-source.js';
import { callLimits } from '../support/call-limits.js';
import { silentLogger } from '../support/engine.js';
import { misbehaving, startSource, waitFor } from './support.js';

const callCtx = { runId: 'run1', toolCallId: 'call1', requester: { userId: 'U1' }, logger: silentLogger };
const call = (source: McpSource, name: string, args: unknown, timeoutMs = 30_000, max = 16_000) => {
  const tool = source.tools().get(name);
  if (!tool) throw new Error(`no tool ${name}`);
  return executeCall(tool, args, callCtx, callLimits(timeoutMs, max));
};

let dir: string;
const open: McpSource[] = [];
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lg-mcp-bad-'));
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const start = async (servers: Record<string, unknown>, reserved: string[] = []) => {
  const started = await startSource(servers, { reserved });
  open.push(started.source);
  return started;
};

describe('misbehaving MCP servers', { timeout: 40_000 }, () => {
  it('never answers: a timeout result at the timeout, and the server is told the call is cancelled', async () => {
    const log = join(dir, 'cancelled.log');
    const { source } = await start({ bad: { command: misbehaving('hang', log), timeoutSeconds: 1 } });
    const { result } = await call(source, 'bad__hang', {}, 1_000);
    expect(result).toEqual({
      ok: false,
      error: {
        code: 'timeout',
        message: 'bad__hang did not finish within 1000 ms and was abandoned.',
        transient: true,
      },
    });
    await waitFor('the cancel notification', () => {
      try {
        return readFileSync(log, 'utf8').startsWith('cancelled ');
      } catch {
        return false;
      }
    });
    expect((await call(source, 'bad__echo', { text: 'after' })).result).toEqual({ ok: true, data: 'after' });
  });

  it('crashes mid-call: a failed result saying so; the server is started again and serves', async () => {
    const { source, logger } = await start({ bad: { command: misbehaving('crash') } });
    const { result } = await call(source, 'bad__crash', {});
    expect(result).toEqual({
      ok: false,
      error: {
        code: 'mcp_server_lost',
        message: expect.stringContaining('whether it took effect is unknown'),
      },
    });
    await waitFor('the reconnect', () => source.report().bad?.state === 'connected');
    expect((await call(source, 'bad__echo', { text: 'back' })).result).toEqual({ ok: true, data: 'back' });
    expect(logger.lines.map((l) => l.msg)).toContain('MCP server connection closed; reconnecting');
  });

  it('a write whose server dies mid-call is outcome_unknown, for a person to check', async () => {
    const { source } = await start({
      bad: { command: misbehaving('crash'), approvers: ['U0MGR'], tools: { crash: { effect: 'write' } } },
    });
    const tool = source.tools().get('bad__crash');
    const ctx = { ...callCtx, signal: new AbortController().signal, idempotencyKey: 'run1:call1' };
    await tool?.preview?.({}, ctx);
    const { result } = await call(source, 'bad__crash', {});
    expect(result).toEqual({
      ok: false,
      error: {
        code: 'outcome_unknown',
        message: expect.stringContaining(
          'whether it took effect is unknown; have a person check before trying again',
        ),
      },
    });
  });

  it('answers 10 MB: the model sees a bounded observation with the total size', async () => {
    const { source } = await start({ bad: { command: misbehaving('huge') } });
    const { result } = await call(source, 'bad__huge', {}, 30_000, 16_000);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(String(result.data).length).toBeLessThan(16_500);
    expect(result.truncated?.totalChars).toBeGreaterThan(1_000_000);
  });

  it('a reply over maxReplyBytes drops the connection with a result naming the bound; it reconnects', async () => {
    const { source } = await start({ bad: { command: misbehaving('huge'), maxReplyBytes: 1_048_576 } });
    const { result } = await call(source, 'bad__huge', {});
    expect(result).toEqual({
      ok: false,
      error: {
        code: 'mcp_server_lost',
        message: expect.stringContaining('ReadBuffer exceeded maximum size of 1048576 bytes'),
      },
    });
    await waitFor('the reconnect', () => source.report().bad?.state === 'connected');
  });

  it('an input schema that is not JSON Schema: that tool is refused with the reason, the others serve', async () => {
    const { source } = await start({ bad: { command: misbehaving('bad-schema') } });
    expect([...source.tools().keys()]).toEqual(['bad__echo']);
    const broken = source.rows().find((r) => r.tool === 'broken');
    expect(broken?.refused).toMatch(/^its input schema is not valid JSON Schema: schema is invalid: .*type/);
    expect(broken?.collision).toBe(false);
    expect(source.rows().find((r) => r.tool === 'has.dot')?.refused).toBe(
      'bad__has.dot is not a usable tool name (letters, digits, _ or -, at most 64)',
    );
  });

  it('a tool named like a built-in is a start-up problem naming the server and the tool', async () => {
    const { source } = await start({ bad: { command: misbehaving('collide') } }, ['current_time']);
    expect(source.tools().has('bad__current_time')).toBe(false);
    expect(source.collisions()).toEqual([
      {
        key: 'mcp.servers.bad',
        problem: expect.stringContaining('its tool current_time takes the name of the tool current_time'),
      },
    ]);
  });

  it('a server that cannot start is reported by name; the others serve', async () => {
    const { source, logger } = await start({
      gone: { command: [join(dir, 'no-such-program')] },
      ok: { command: misbehaving('none') },
    });
    expect(source.report().gone).toMatchObject({ state: 'failed', error: expect.stringContaining('ENOENT') });
    expect(source.report().ok?.state).toBe('connected');
    expect([...source.tools().keys()]).toEqual(['ok__echo']);
    expect(logger.lines).toContainEqual(
      expect.objectContaining({
        level: 'error',
        msg: 'MCP server gone is unavailable: its tools are not offered until it connects',
      }),
    );
  });
});
