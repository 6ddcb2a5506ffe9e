import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolSchema } from '../../src/loop/tool-schemas.js';
import { createHttpRequest, httpRequestSettings } from '../../src/tools/http-request.js';
import { type HttpFixture, reply, startHttpFixture } from '../fakes/http-fixtures.js';
import { parseArgs, previewOf, run, toolContext } from './tool-harness.js';

let server: HttpFixture;

beforeAll(async () => {
  server = await startHttpFixture((req, res) => {
    if (req.path.startsWith('/api/search/')) return reply(res, 200, 'application/json', '{}');
    if (req.path === '/api/deploy') return reply(res, 201, 'application/json', '{"deployment":"d-42"}');
    if (req.path === '/api/fail') return reply(res, 409, 'application/json', '{"error":"already running"}');
    if (req.path === '/api/moved') {
      res.writeHead(307, { location: '/api/deploy' });
      res.end();
      return;
    }
    reply(res, 404, 'text/plain', 'no');
  });
});

afterAll(async () => {
  await server.close();
});

function tool() {
  const settings = httpRequestSettings.parse({
    allow: [
      { prefix: `${server.url}/api/`, allowPrivate: true, headersEnv: { Authorization: 'DEPLOY_AUTH' } },
    ],
  });
  return createHttpRequest(settings, { env: { DEPLOY_AUTH: 'Bearer top-secret-token' } });
}

const deploy = () => ({
  method: 'POST',
  url: `${server.url}/api/deploy`,
  body: { service: 'payments', version: '1.2.3' },
});

describe('http_request', () => {
  it('is a write tool', () => {
    expect(tool().effect).toBe('write');
  });

  it('sends the JSON body, the secret header and the idempotency key', async () => {
    const result = await run(tool(), deploy(), toolContext({ idempotencyKey: 'run-9:call-3' }));
    expect(result).toEqual({ status: 201, body: '{\n  "deployment": "d-42"\n}' });
    const seen = server.requests.at(-1);
    expect(seen?.method).toBe('POST');
    expect(JSON.parse(seen?.body ?? '')).toEqual({ service: 'payments', version: '1.2.3' });
    expect(seen?.headers['content-type']).toBe('application/json');
    expect(seen?.headers.authorization).toBe('Bearer top-secret-token');
    expect(seen?.headers['idempotency-key']).toBe('run-9:call-3');
  });

  it('previews method, URL and body, naming secret headers without their values', async () => {
    const preview = await previewOf(tool(), deploy());
    expect(preview).toContain('**POST**');
    expect(preview).toContain(`${server.url}/api/deploy`);
    expect(preview).toContain('"service": "payments"');
    expect(preview).toContain('Authorization');
    expect(preview).not.toContain('top-secret-token');
    expect(preview).not.toContain('Bearer');
  });

  it('rejects a URL outside the allowlist at argument validation, before any approval', () => {
    expect(() => parseArgs(tool(), { method: 'POST', url: 'https://elsewhere.example/api/deploy' })).toThrow(
      /not an allowed URL/,
    );
    expect(() => parseArgs(tool(), { method: 'GET', url: `${server.url}/api/deploy` })).toThrow();
  });

  it('previews, hashes and requests one normalised URL: the path sent is the path shown', async () => {
    const url = `${server.url}/api/search/caf%C3%A9 menu?q=a b`;
    const args = parseArgs(tool(), { method: 'POST', url }) as { url: string };
    expect(args.url).toBe(`${server.url}/api/search/caf%C3%A9%20menu?q=a%20b`);
    const preview = await previewOf(tool(), { method: 'POST', url });
    expect(preview).toContain(args.url);
    await run(tool(), { method: 'POST', url });
    expect(`${server.url}${server.requests.at(-1)?.path}`).toBe(args.url);
  });

  it.each([
    ['a .. segment', '/api/search/../deploy', /\. or \.\. path segment/],
    ['an encoded .. segment', '/api/search/%2e%2e/deploy', /\. or \.\. path segment/],
    ['a mixed-case encoded . segment', '/api/search/%2E/x', /\. or \.\. path segment/],
    ['an encoded slash', '/api/search/a%2Fb', /encoded \/ or \\/],
    ['an encoded backslash', '/api/search/a%5cb', /encoded \/ or \\/],
    ['a backslash', '/api/search\\..\\deploy', /backslash/],
    ['a tab', '/api/se\tarch/x', /control character/],
    ['a line feed', '/api/search/x\n', /control character/],
    ['a carriage return', '/api/sea\rrch/x', /control character/],
    ['a C1 control', '/api/search/\u0085x', /control character/],
  ])('refuses a URL with %s at validation, with a message the model can act on', (_name, path, message) => {
    expect(() => parseArgs(tool(), { method: 'POST', url: `${server.url}${path}` })).toThrow(message);
  });

  it('keeps dots that are not whole segments, and encoded separators in the query', () => {
    const url = `${server.url}/api/search/v1.2..3/.well?path=%2Fetc&up=..`;
    expect((parseArgs(tool(), { method: 'POST', url }) as { url: string }).url).toBe(url);
    const noPath = `${server.url}?next=/api/../x%2F`;
    expect(() => parseArgs(tool(), { method: 'POST', url: noPath })).toThrow(/not an allowed URL/);
  });

  it('still describes the URL as a plain string to the model', () => {
    expect(toolSchema(tool()).parameters).toMatchObject({
      properties: { url: { type: 'string', description: expect.stringContaining('allowed prefixes') } },
    });
  });

  it('turns a non-2xx reply into an error with the status and the body', async () => {
    await expect(run(tool(), { method: 'POST', url: `${server.url}/api/fail` })).rejects.toMatchObject({
      code: 'http_status',
      message: expect.stringContaining('409'),
    });
  });

  it('does not follow redirects', async () => {
    const before = server.requests.length;
    await expect(
      run(tool(), { method: 'PUT', url: `${server.url}/api/moved`, body: [1] }),
    ).rejects.toMatchObject({
      code: 'redirect_not_followed',
    });
    expect(server.requests.length).toBe(before + 1);
  });

  it('still checks addresses at execution (no allowPrivate: loopback refused)', async () => {
    const strict = createHttpRequest(httpRequestSettings.parse({ allow: [`${server.url}/api/`] }), {
      env: {},
    });
    await expect(run(strict, deploy())).rejects.toMatchObject({ code: 'private_address' });
  });
});
