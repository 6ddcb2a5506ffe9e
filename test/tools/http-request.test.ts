import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpRequest, httpRequestSettings } from '../../src/tools/http-request.js';
import { type HttpFixture, reply, startHttpFixture } from '../fakes/http-fixtures.js';
import { parseArgs, previewOf, run, toolContext } from './tool-harness.js';

let server: HttpFixture;

beforeAll(async () => {
  server = await startHttpFixture((req, res) => {
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
