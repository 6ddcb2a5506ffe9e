/**
 * The real @modelcontextprotocol/server-everything over stdio: effects from its annotations, structured
 * content, images and resources as observations, a tool-level error, a timeout (with the per-tool
 * override) and the tool it registers only after initialisation, announced by tools/list_changed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeCall } from '../../src/loop/execute.js';
import type { AnyTool } from '../../src/loop/tool-contract.js';
import { callLimits } from '../support/call-limits.js';
import { silentLogger } from '../support/engine.js';
import { bin, type Started, startSource, waitFor } from './support.js';

let ev: Started;
beforeAll(async () => {
  ev = await startSource({
    ev: {
      command: [bin('mcp-server-everything'), 'stdio'],
      tools: { 'trigger-long-running-operation': { timeoutSeconds: 1 } },
    },
  });
}, 30_000);
afterAll(async () => {
  await ev?.source.close();
});

const callCtx = { runId: 'run1', toolCallId: 'call1', requester: { userId: 'U1' }, logger: silentLogger };
const tool = (name: string): AnyTool => {
  const found = ev.source.tools().get(name);
  if (!found) throw new Error(`no tool ${name}: ${[...ev.source.tools().keys()].join(', ')}`);
  return found;
};
const run = (name: string, args: unknown, max = 16_000) =>
  executeCall(tool(name), args, callCtx, callLimits(tool(name).timeoutMs ?? 30_000, max));

describe('server-everything over stdio', { timeout: 30_000 }, () => {
  it('each tool gets the effect of its readOnlyHint; the reason is printed as an annotation', () => {
    const rows = Object.fromEntries(ev.source.rows().map((r) => [r.tool, r.decision]));
    expect(rows.echo).toEqual({ effect: 'read', source: 'annotation', why: 'readOnlyHint: true' });
    expect(rows['get-sum']?.effect).toBe('read');
    expect(rows['gzip-file-as-resource']).toEqual({
      effect: 'write',
      source: 'annotation',
      why: 'readOnlyHint: false',
    });
    expect(rows['toggle-simulated-logging']?.effect).toBe('write');
  });

  it('structured content reaches the model beside the text', async () => {
    const { result } = await run('ev__get-structured-content', { location: 'Chicago' });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const data = result.data as { text: string; structuredContent: Record<string, unknown> };
    expect(data.structuredContent).toEqual(expect.objectContaining({ temperature: expect.any(Number) }));
    expect(JSON.parse(data.text)).toEqual(data.structuredContent);
  });

  it('an image is a note (type and size), never pixels; an embedded resource keeps its URI and text', async () => {
    const image = await run('ev__get-tiny-image', {});
    expect(image.result).toEqual({
      ok: true,
      data: expect.stringMatching(/\[image \(image\/png\), \d+ bytes: not shown to the model\]/),
    });
    expect(JSON.stringify(image.result)).not.toMatch(/iVBOR/);
    const resource = await run('ev__get-resource-reference', { resourceType: 'Text', resourceId: 2 });
    expect(resource.result).toEqual({
      ok: true,
      data: expect.stringContaining('[resource demo://resource/dynamic/text/2 (text/plain)]\nResource 2:'),
    });
  });

  it('a result the server flags isError is a failed result the model reads', async () => {
    // Arguments the engine would refuse: sent straight to execute, the server's own check answers isError.
    const { result } = await run('ev__get-sum', { a: 'one', b: 2 });
    expect(result).toEqual({
      ok: false,
      error: { code: 'mcp_tool_error', message: expect.stringContaining('ev__get-sum reported an error') },
    });
  });

  it('a call past its timeout (tools.<tool>.timeoutSeconds) is a timeout result, at the timeout', async () => {
    const started = performance.now();
    const { result } = await run('ev__trigger-long-running-operation', { duration: 20, steps: 2 });
    expect(result).toEqual({
      ok: false,
      error: {
        code: 'timeout',
        message: expect.stringContaining('did not finish within 1000 ms'),
        transient: true,
      },
    });
    expect(performance.now() - started).toBeLessThan(10_000);
    // The connection survives the abandoned call.
    expect((await run('ev__echo', { message: 'still here' })).result).toEqual({
      ok: true,
      data: 'Echo: still here',
    });
  });

  it('a stdio server gets a minimal environment and its envFromEnv variables, never the worker’s', async () => {
    const withEnv = await startSource(
      {
        envd: {
          command: [bin('mcp-server-everything'), 'stdio'],
          envFromEnv: { SERVER_TOKEN: 'LG_TEST_TOKEN' },
        },
      },
      { env: { LG_TEST_TOKEN: 'token-for-the-server' } },
    );
    try {
      const tool = withEnv.source.tools().get('envd__get-env');
      const ctx = { ...callCtx, signal: new AbortController().signal, idempotencyKey: 'k' };
      const env = JSON.parse(String(await tool?.execute({}, ctx))) as Record<string, string>;
      expect(env.SERVER_TOKEN).toBe('token-for-the-server');
      const allowed = ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER', 'SERVER_TOKEN'];
      expect(Object.keys(env).filter((k) => !allowed.includes(k))).toEqual([]);
      expect(process.env.PATH).toBeDefined();
    } finally {
      await withEnv.source.close();
    }
  });

  it('the tool it registers after initialisation arrives through tools/list_changed', async () => {
    await waitFor('simulate-research-query', () => ev.source.tools().has('ev__simulate-research-query'));
    expect(ev.source.report().ev?.version).toMatch(/^[0-9a-f]{16}$/);
  });
});
