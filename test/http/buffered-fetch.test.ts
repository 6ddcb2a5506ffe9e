import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { createBufferedFetch } from '../../src/http/buffered-fetch.js';

let server: Server | undefined;
const seen: { method?: string; url?: string; headers: IncomingMessage['headers']; body: string }[] = [];

async function serve(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void) {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      handler(req, res, body);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

afterEach(async () => {
  seen.length = 0;
  const open = server;
  server = undefined;
  if (!open) return;
  open.closeAllConnections();
  await new Promise((resolve) => open.close(resolve));
});

describe('createBufferedFetch', () => {
  it('sends method, headers and a string body, and reads status, headers and the whole reply', async () => {
    const url = await serve((_req, res, body) => {
      res.writeHead(201, 'Made', { 'content-type': 'application/json', 'x-echo': 'yes' });
      res.end(JSON.stringify({ got: body }));
    });
    const res = await createBufferedFetch()(`${url}/v1/x?q=1`, {
      method: 'POST',
      headers: new Headers({ 'content-type': 'application/json', authorization: 'Bearer k' }),
      body: '{"a":1}',
    });
    expect(res.status).toBe(201);
    expect(res.statusText).toBe('Made');
    expect(res.ok).toBe(true);
    expect(res.headers.get('x-echo')).toBe('yes');
    expect(res.headers.get('X-Echo')).toBe('yes');
    expect(res.headers.has('x-missing')).toBe(false);
    expect(Object.fromEntries(res.headers.entries())).toMatchObject({ 'x-echo': 'yes' });
    expect(await res.json()).toEqual({ got: '{"a":1}' });
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/v1/x?q=1', body: '{"a":1}' });
    expect(seen[0]?.headers).toMatchObject({ authorization: 'Bearer k', 'content-length': '7' });
  });

  it('sends URLSearchParams as a form body and decodes a gzip reply', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
      res.end(gzipSync('hello, compressed'));
    });
    const res = await createBufferedFetch()(url, { method: 'POST', body: new URLSearchParams({ a: 'b c' }) });
    expect(await res.text()).toBe('hello, compressed');
    expect(seen[0]?.body).toBe('a=b+c');
  });

  it('keeps connections alive between requests', async () => {
    const url = await serve((_req, res) => res.end('ok'));
    const sockets = new Set<unknown>();
    server?.on('connection', (s) => sockets.add(s));
    const f = createBufferedFetch();
    for (let i = 0; i < 5; i++) expect(await (await f(url)).text()).toBe('ok');
    expect(sockets.size).toBe(1);
  });

  it('rejects with an AbortError when the signal aborts before or during the request', async () => {
    const url = await serve(() => {
      // Never answers.
    });
    const f = createBufferedFetch();
    await expect(f(url, { signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
    const controller = new AbortController();
    const pending = f(url, { method: 'POST', body: 'x', signal: controller.signal });
    await expect.poll(() => seen.length).toBe(1);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('rejects with a TypeError carrying the cause when nothing listens', async () => {
    const url = await serve((_req, res) => res.end());
    const open = server!;
    server = undefined;
    open.closeAllConnections();
    await new Promise((resolve) => open.close(resolve));
    const err = await createBufferedFetch()(url).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as TypeError).cause).toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('hands bodies it cannot send from a buffer to the fallback fetch', async () => {
    const calls: unknown[] = [];
    const fallback = (async (input: unknown) => {
      calls.push(input);
      return new Response('from fallback');
    }) as typeof fetch;
    const form = new FormData();
    form.set('file', new Blob(['x']));
    const res = await createBufferedFetch({ fallback })('http://127.0.0.1:9/upload', {
      method: 'POST',
      body: form,
    });
    expect(await res.text()).toBe('from fallback');
    expect(calls).toEqual(['http://127.0.0.1:9/upload']);
  });
});
