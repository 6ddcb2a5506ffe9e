/**
 * A Streamable HTTP MCP server built in test/ with the SDK's McpServer: headers from the environment,
 * structured results, a session the server forgot (the call is sent again on a new session, and runs
 * once), tools/list_changed (a new tool appears, the registry listeners are told), and a tool redefined
 * after a call was shown for approval (the approved call is refused, not run under the new definition).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../demo/lib/free-port.js';
import type { ToolContext } from '../../src/loop/tool-contract.js';
import { silentLogger } from '../support/engine.js';
import { type HttpMcpServer, startHttpMcpServer } from './servers/http-server.js';
import { type Started, startSource, waitFor } from './support.js';

let server: HttpMcpServer;
let started: Started;
let changes = 0;
beforeAll(async () => {
  server = await startHttpMcpServer();
  started = await startSource(
    {
      web: {
        url: server.url,
        headersEnv: { 'X-Api-Key': 'WEB_MCP_KEY' },
        approvers: ['U0MGR'],
        tools: { lookup: { effect: 'write' } },
      },
    },
    { env: { WEB_MCP_KEY: 'key-from-the-environment' } },
  );
  started.source.onChange(() => {
    changes += 1;
  });
}, 30_000);
afterAll(async () => {
  await started?.source.close();
  await server?.close();
});

const ctx = (toolCallId: string): ToolContext => ({
  signal: new AbortController().signal,
  idempotencyKey: `run1:${toolCallId}`,
  runId: 'run1',
  toolCallId,
  requester: { userId: 'U1' },
  logger: silentLogger,
});
const lookup = () => {
  const tool = started.source.tools().get('web__lookup');
  if (!tool) throw new Error('no web__lookup');
  return tool;
};

describe('a Streamable HTTP MCP server', { timeout: 30_000 }, () => {
  it('is connected with the header read from the environment; the override makes lookup a write', () => {
    expect(started.source.report().web).toMatchObject({ state: 'connected' });
    expect(server.initHeaders[0]?.['x-api-key']).toBe('key-from-the-environment');
    expect(started.source.rows().find((r) => r.tool === 'lookup')?.decision).toEqual({
      effect: 'write',
      source: 'override',
      why: 'mcp.servers.web.tools.lookup.effect',
    });
  });

  it('an approved call runs with its structured result', async () => {
    const tool = lookup();
    await tool.preview?.({ key: 'abc' }, ctx('c1'));
    expect(await tool.execute({ key: 'abc' }, ctx('c1'))).toEqual({
      text: '{"key":"abc","value":3}',
      structuredContent: { key: 'abc', value: 3 },
    });
  });

  it('a call never shown for approval (no recorded definition) is refused', async () => {
    await expect(lookup().execute({ key: 'unseen' }, ctx('c-unseen'))).rejects.toMatchObject({
      code: 'tool_changed',
    });
    expect(server.calls).not.toContain('unseen');
  });

  it('the server forgot the session: the call goes out once more on a new session and runs once', async () => {
    const before = server.sessionsOpened();
    server.forgetSessions();
    const tool = lookup();
    await tool.preview?.({ key: 'after-loss' }, ctx('c2'));
    expect(await tool.execute({ key: 'after-loss' }, ctx('c2'))).toMatchObject({
      structuredContent: { key: 'after-loss', value: 10 },
    });
    expect(server.sessionsOpened()).toBe(before + 1);
    expect(server.calls.filter((k) => k === 'after-loss')).toHaveLength(1);
    expect(started.logger.lines.map((l) => l.msg)).toContain(
      'MCP session lost; reconnecting and sending the call again',
    );
  });

  it('tools/list_changed: a tool added on the server is offered, and the listeners are told', async () => {
    const seen = changes;
    server.addTool('extra');
    await waitFor('web__extra', () => started.source.tools().has('web__extra'));
    expect(changes).toBeGreaterThan(seen);
    expect(await started.source.tools().get('web__extra')?.execute({}, ctx('c3'))).toBe('extra ran');
  });

  it('a server down at start-up is retried with backoff and serves once it is up', async () => {
    const port = await freePort();
    const late = await startSource({ late: { url: `http://127.0.0.1:${port}/mcp`, effect: 'read' } });
    try {
      expect(late.source.report().late?.state).toBe('failed');
      expect(late.source.tools().size).toBe(0);
      const up = await startHttpMcpServer(port);
      try {
        await waitFor('the late server', () => late.source.tools().has('late__lookup'));
        expect(late.source.report().late?.state).toBe('connected');
      } finally {
        await up.close();
      }
    } finally {
      await late.source.close();
    }
  });

  it('a server that goes away: its calls fail, it is reported failed, and reconnected once it is back', async () => {
    const port = await freePort();
    let up = await startHttpMcpServer(port);
    const gone = await startSource({ gone: { url: `http://127.0.0.1:${port}/mcp`, effect: 'read' } });
    try {
      expect(gone.source.report().gone?.state).toBe('connected');
      await up.close();
      const tool = gone.source.tools().get('gone__lookup');
      await expect(tool?.execute({ key: 'k' }, ctx('c6'))).rejects.toThrow(/fetch failed/);
      expect(gone.source.report().gone).toMatchObject({
        state: 'failed',
        error: expect.stringMatching(/fetch failed/),
      });
      up = await startHttpMcpServer(port);
      await waitFor('the reconnect', () => gone.source.report().gone?.state === 'connected');
      expect(
        await gone.source.tools().get('gone__lookup')?.execute({ key: 'back' }, ctx('c7')),
      ).toMatchObject({
        structuredContent: { key: 'back', value: 4 },
      });
    } finally {
      await gone.source.close();
      await up.close();
    }
  });

  it('a write redefined as readOnlyHint: true after its card was shown: the approved call is still refused', async () => {
    const shownWith = started.source.tools().get('web__remove');
    expect(shownWith?.effect).toBe('write');
    await shownWith?.preview?.({ key: 'approved' }, ctx('c8'));
    const version = started.source.report().web?.version;
    server.markRemoveReadOnly();
    await waitFor('the new definition', () => started.source.report().web?.version !== version);
    const redefined = started.source.tools().get('web__remove');
    // The server's hint now makes it a read: without the check it would run with nobody having seen it.
    expect(redefined?.effect).toBe('read');
    for (const tool of [shownWith, redefined]) {
      await expect(tool?.execute({ key: 'approved' }, ctx('c8'))).rejects.toMatchObject({
        code: 'tool_changed',
      });
    }
    expect(server.removed).not.toContain('approved');
    // A read call made under the new definition (never shown for approval) runs.
    expect(await redefined?.execute({ key: 'fresh' }, ctx('c9'))).toBe('removed fresh');
  });

  it('a tool redefined after its card was shown: the approved call is refused, a new one runs', async () => {
    const shownWith = lookup();
    await shownWith.preview?.({ key: 'shown' }, ctx('c4'));
    const version = started.source.report().web?.version;
    server.redefineLookup();
    await waitFor('the new definition', () => started.source.report().web?.version !== version);
    const redefined = lookup();
    expect(redefined).not.toBe(shownWith);
    for (const tool of [shownWith, redefined]) {
      await expect(tool.execute({ key: 'shown' }, ctx('c4'))).rejects.toMatchObject({
        code: 'tool_changed',
        message: expect.stringContaining('changed or removed lookup since this call was shown for approval'),
      });
    }
    expect(server.calls).not.toContain('shown');
    await redefined.preview?.({ key: 'fresh' }, ctx('c5'));
    expect(await redefined.execute({ key: 'fresh' }, ctx('c5'))).toMatchObject({
      structuredContent: { key: 'fresh', value: 5 },
    });
  });
});

describe('a Streamable HTTP server’s replies are bounded by maxReplyBytes', { timeout: 30_000 }, () => {
  for (const json of [false, true]) {
    it(`a${json ? ' JSON' : 'n event-stream'} reply over the bound drops the connection and fails the call, naming the bound; the server is reconnected`, async () => {
      const up = await startHttpMcpServer(0, { reply: true, json });
      const bounded = await startSource({ big: { url: up.url, maxReplyBytes: 65_536 } });
      try {
        const reply = () => bounded.source.tools().get('big__reply');
        expect(await reply()?.execute({ size: 60_000 }, ctx('r1'))).toHaveLength(60_000);
        await expect(reply()?.execute({ size: 200_000 }, ctx('r2'))).rejects.toMatchObject({
          code: 'mcp_server_lost',
          message: expect.stringContaining('larger than maxReplyBytes (65536 bytes)'),
        });
        expect(bounded.logger.lines.map((l) => l.msg)).toContain(
          'MCP server big: a reply of the server was larger than maxReplyBytes (65536 bytes); dropping the connection',
        );
        await waitFor('the reconnect', () => bounded.source.report().big?.state === 'connected');
        expect(await reply()?.execute({ size: 10 }, ctx('r3'))).toBe('xxxxxxxxxx');
      } finally {
        await bounded.source.close();
        await up.close();
      }
    });
  }
});
