import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpGet, httpGetSettings } from '../../src/tools/http-get.js';
import type { Lookup } from '../../src/tools/net/lookup.js';
import { type HttpFixture, reply, startHttpFixture } from '../fakes/http-fixtures.js';
import { run, text, toolContext } from './tool-harness.js';

let server: HttpFixture;

beforeAll(async () => {
  server = await startHttpFixture((req, res) => {
    const path = req.path;
    if (path === '/ok.json') return reply(res, 200, 'application/json', '{"status":"green","n":[1,2]}');
    if (path === '/page.html') {
      return reply(
        res,
        200,
        'text/html; charset=utf-8',
        '<html><head><style>p{color:red}</style><script>alert("x")</script></head>' +
          '<body><h1>Status &amp; health</h1><p>All   systems&nbsp;<b>operational</b> &#8212; ok</p></body></html>',
      );
    }
    if (path === '/big') return reply(res, 200, 'text/plain', 'x'.repeat(5000));
    if (path === '/big-chunked') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      for (let i = 0; i < 10; i++) res.write('y'.repeat(1000));
      res.end();
      return;
    }
    if (path === '/slow') return; // never answers
    if (path === '/busy') {
      res.writeHead(503, { 'content-type': 'text/plain', 'retry-after': '3' });
      res.end('maintenance');
      return;
    }
    if (path === '/broken') return reply(res, 500, 'text/plain', 'stack trace');
    if (path === '/redirect-ok') {
      res.writeHead(302, { location: '/ok.json' });
      res.end();
      return;
    }
    if (path === '/redirect-metadata') {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
      res.end();
      return;
    }
    if (path === '/redirect-elsewhere') {
      res.writeHead(301, { location: 'https://not-allowed.example/x' });
      res.end();
      return;
    }
    if (path === '/redirect-private-name') {
      res.writeHead(307, { location: 'http://internal.example/admin' });
      res.end();
      return;
    }
    if (path === '/loop') {
      res.writeHead(302, { location: '/loop' });
      res.end();
      return;
    }
    if (path === '/secret-echo/redirect') {
      res.writeHead(302, { location: '/plain-echo' });
      res.end();
      return;
    }
    if (path === '/secret-echo' || path === '/plain-echo') {
      return reply(res, 200, 'text/plain', `auth=${req.headers.authorization ?? 'none'}`);
    }
    reply(res, 404, 'text/plain', 'not found');
  });
});

afterAll(async () => {
  await server.close();
});

/** Test resolver: a few made-up names, one of them resolving to the fake server's loopback address. */
const fakeDns: Lookup = async (host) => {
  if (host === 'evil.example' || host === 'status.test') return [{ address: '127.0.0.1', family: 4 }];
  if (host === 'internal.example') return [{ address: '10.1.2.3', family: 4 }];
  if (host === 'mixed.example')
    return [
      { address: '93.184.216.34', family: 4 },
      { address: 'fd00::1', family: 6 },
    ];
  throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
};

function tool(allow: unknown[], extra: Record<string, unknown> = {}, env: Record<string, string> = {}) {
  return createHttpGet(httpGetSettings.parse({ allow, ...extra }), { env, lookup: fakeDns });
}

const local = () => ({ prefix: `${server.url}/`, allowPrivate: true });

describe('http_get', () => {
  it('pretty-prints JSON and reports the status', async () => {
    const out = text(await run(tool([local()]), { url: `${server.url}/ok.json` }));
    expect(out).toContain('HTTP 200');
    expect(out).toContain('"status": "green"');
    expect(out).toContain('  "n": [\n    1,');
  });

  it('a 503 is a transient failure with its Retry-After (the engine retries it); a 500 is an answer', async () => {
    await expect(run(tool([local()]), { url: `${server.url}/busy` })).rejects.toMatchObject({
      code: 'http_status',
      transient: true,
      retryAfterMs: 3_000,
      message: expect.stringContaining('answered 503: maintenance'),
      // Still the answer when retries do not help: a health endpoint reports "down" this way.
      answer: { value: expect.stringMatching(/^HTTP 503 Service Unavailable for GET .*\n\nmaintenance$/s) },
    });
    expect(text(await run(tool([local()]), { url: `${server.url}/broken` }))).toContain('HTTP 500');
  });

  it('a refused connection is a transient failure', async () => {
    const closed = await startHttpFixture(() => {});
    const url = `${closed.url}/x`;
    await closed.close();
    await expect(
      run(tool([{ prefix: `${closed.url}/`, allowPrivate: true }]), { url }),
    ).rejects.toMatchObject({ code: 'request_failed', transient: true });
  });

  it('reduces HTML to readable text without scripts and styles', async () => {
    const out = text(await run(tool([local()]), { url: `${server.url}/page.html` }));
    expect(out).toContain('Status & health');
    expect(out).toContain('All systems operational — ok');
    expect(out).not.toContain('alert');
    expect(out).not.toContain('color:red');
    expect(out).not.toContain('<');
  });

  it('refuses a host that is not allowlisted', async () => {
    await expect(run(tool([local()]), { url: 'https://example.com/' })).rejects.toMatchObject({
      code: 'url_not_allowed',
    });
  });

  it('refuses a URL that only looks like it is under the prefix', async () => {
    const t = tool([{ prefix: `${server.url}/api`, allowPrivate: true }]);
    await expect(run(t, { url: `${server.url}/api-admin` })).rejects.toMatchObject({
      code: 'url_not_allowed',
    });
    await expect(run(t, { url: `${server.url}/api/../ok.json` })).rejects.toThrow(/\. or \.\. path segment/);
  });

  it('requests the normalised URL and reports that one', async () => {
    const out = text(await run(tool([local()]), { url: `${server.url}/ok.json?x=a b` }));
    expect(server.requests.at(-1)?.path).toBe('/ok.json?x=a%20b');
    expect(out).toContain(`for GET ${server.url}/ok.json?x=a%20b\n`);
    await expect(run(tool([local()]), { url: `${server.url}/x/%2e%2e/ok.json` })).rejects.toThrow(
      /path segment/,
    );
  });

  it('refuses loopback unless the prefix allows private addresses', async () => {
    const t = tool([`${server.url}/`]);
    await expect(run(t, { url: `${server.url}/ok.json` })).rejects.toMatchObject({ code: 'private_address' });
  });

  it('refuses a name that resolves to 127.0.0.1', async () => {
    const t = tool(['http://evil.example/']);
    await expect(run(t, { url: 'http://evil.example/' })).rejects.toMatchObject({
      code: 'private_address',
      message: expect.stringContaining('127.0.0.1 (loopback)'),
    });
  });

  it('refuses a host when any of its addresses is private', async () => {
    const t = tool(['https://mixed.example/']);
    await expect(run(t, { url: 'https://mixed.example/' })).rejects.toMatchObject({
      code: 'private_address',
    });
  });

  it('connects to the checked address of an allowed private name (pinned, no second lookup)', async () => {
    const t = tool([{ prefix: `http://status.test:${server.port}/`, allowPrivate: true }]);
    const out = text(await run(t, { url: `http://status.test:${server.port}/ok.json` }));
    expect(out).toContain('"status": "green"');
    expect(server.requests.at(-1)?.headers.host).toBe(`status.test:${server.port}`);
  });

  it('follows an allowed redirect', async () => {
    const out = text(await run(tool([local()]), { url: `${server.url}/redirect-ok` }));
    expect(out).toContain('redirected to');
    expect(out).toContain('"status": "green"');
  });

  it('refuses a redirect to the metadata address', async () => {
    const t = tool([local(), 'http://169.254.169.254/']);
    await expect(run(t, { url: `${server.url}/redirect-metadata` })).rejects.toMatchObject({
      code: 'private_address',
      message: expect.stringContaining('link-local'),
    });
  });

  it('refuses a redirect to a name resolving to a private address', async () => {
    const t = tool([local(), 'http://internal.example/']);
    await expect(run(t, { url: `${server.url}/redirect-private-name` })).rejects.toMatchObject({
      code: 'private_address',
      message: expect.stringContaining('10.1.2.3'),
    });
  });

  it('refuses a redirect to a host that is not allowlisted', async () => {
    await expect(run(tool([local()]), { url: `${server.url}/redirect-elsewhere` })).rejects.toMatchObject({
      code: 'url_not_allowed',
      message: expect.stringContaining('redirect from'),
    });
  });

  it('stops after too many redirects', async () => {
    await expect(
      run(tool([local()], { maxRedirects: 3 }), { url: `${server.url}/loop` }),
    ).rejects.toMatchObject({
      code: 'too_many_redirects',
    });
  });

  it('refuses a body over the size limit (declared length)', async () => {
    await expect(
      run(tool([local()], { maxBytes: 1024 }), { url: `${server.url}/big` }),
    ).rejects.toMatchObject({
      code: 'response_too_large',
    });
  });

  it('refuses a body over the size limit (streamed without a length)', async () => {
    await expect(
      run(tool([local()], { maxBytes: 2048 }), { url: `${server.url}/big-chunked` }),
    ).rejects.toMatchObject({ code: 'response_too_large' });
  });

  it('gives up at its time limit', async () => {
    const started = Date.now();
    await expect(
      run(tool([local()], { timeoutSeconds: 0.2 }), { url: `${server.url}/slow` }),
    ).rejects.toMatchObject({
      code: 'request_timeout',
    });
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("stops when the caller's signal aborts", async () => {
    const controller = new AbortController();
    const pending = run(
      tool([local()]),
      { url: `${server.url}/slow` },
      toolContext({ signal: controller.signal }),
    );
    setTimeout(() => controller.abort(new Error('engine timeout')), 50);
    await expect(pending).rejects.toThrow('engine timeout');
  });

  it('sends secret headers only to their own prefix, not along a redirect, and never in errors', async () => {
    const t = tool(
      [
        {
          prefix: `${server.url}/secret-echo`,
          allowPrivate: true,
          headersEnv: { Authorization: 'STATUS_AUTH' },
        },
        { prefix: `${server.url}/plain-echo`, allowPrivate: true },
      ],
      {},
      { STATUS_AUTH: 'Bearer s3cret' },
    );
    expect(text(await run(t, { url: `${server.url}/secret-echo` }))).toContain('auth=Bearer s3cret');
    expect(text(await run(t, { url: `${server.url}/plain-echo` }))).toContain('auth=none');
    expect(text(await run(t, { url: `${server.url}/secret-echo/redirect` }))).toContain('auth=none');
    const err = await run(t, { url: `${server.url}/ok.json` }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'url_not_allowed' });
    expect(String((err as Error).message)).not.toContain('s3cret');
  });

  it('reports an unresolvable host clearly', async () => {
    await expect(
      run(tool(['https://nowhere.example/']), { url: 'https://nowhere.example/' }),
    ).rejects.toMatchObject({
      code: 'dns_failed',
    });
  });
});
