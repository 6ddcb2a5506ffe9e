import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnyTool } from '../../src/loop/tool-contract.js';
import { runActionSettings } from '../../src/tools/run-action/action-settings.js';
import { createRunAction } from '../../src/tools/run-action.js';
import { type HttpFixture, reply, startHttpFixture } from '../fakes/http-fixtures.js';
import { parseArgs, previewOf, run, toolContext } from './tool-harness.js';

let deploy: HttpFixture;

beforeAll(async () => {
  deploy = await startHttpFixture((req, res) => {
    if (req.path.startsWith('/api/restart/')) return reply(res, 202, 'application/json', '{"accepted":true}');
    if (req.path === '/health/payments') return reply(res, 200, 'text/plain', 'ok');
    if (req.path === '/health/search') return reply(res, 503, 'text/plain', 'starting');
    reply(res, 404, 'text/plain', 'no');
  });
});

afterAll(async () => {
  await deploy.close();
});

/** Prints the names and values of its whole environment as JSON. */
const PRINT_ENV = [process.execPath, '-e', 'console.log(JSON.stringify(process.env))'];

/** Prints its arguments as JSON: shows exactly which argv the command received. */
const ECHO_ARGV = [process.execPath, '-e', 'console.log(JSON.stringify(process.argv.slice(1)))'];

function tool(): AnyTool {
  const settings = runActionSettings.parse({
    actions: {
      restart_service: {
        description: 'Restart one service in one environment',
        params: { service: { enum: ['payments', 'search'] }, env: { enum: ['staging', 'prod'] } },
        http: {
          method: 'POST',
          url: `${deploy.url}/api/restart/{service}?env={env}`,
          headersEnv: { Authorization: 'DEPLOY_AUTH' },
          body: { service: '{service}', reason: 'requested in {env}' },
        },
        verify: { http_get: `${deploy.url}/health/{service}`, attempts: 2, intervalSeconds: 0 },
      },
      annotate: {
        description: 'Add a note to the deploy log',
        params: {
          note: { type: 'string', pattern: "[A-Za-z0-9 ./?#&=;$()`'|-]+" },
          count: { type: 'integer', min: 1, max: 5 },
        },
        http: { method: 'PUT', url: `${deploy.url}/api/restart/notes?text={note}&n={count}` },
      },
      echo: {
        description: 'Echo a message through a command',
        params: { msg: { type: 'string', pattern: "[A-Za-z0-9 ./;$()`'|&-]+" }, loud: { type: 'boolean' } },
        command: [...ECHO_ARGV, '{msg}', 'prefix-{msg}', '--loud={loud}'],
      },
      kill: {
        description: 'Send a signal count and a name through a command',
        params: {
          n: { type: 'integer' },
          name: { type: 'string', pattern: '[a-z-]+' },
        },
        command: [...ECHO_ARGV, '{n}', '--count={n}', 'x{name}'],
      },
      service_status: {
        description: 'Read one service status page',
        params: { service: { type: 'string', pattern: '[a-z.%0-9]+' } },
        http: { method: 'GET', url: `${deploy.url}/api/services/{service}/restart` },
        verify: { http_get: `${deploy.url}/health/{service}` },
      },
      print_env: { description: 'Print the environment', command: PRINT_ENV },
      fail: {
        description: 'A command that fails',
        command: [process.execPath, '-e', 'process.stderr.write("disk quota exceeded"); process.exit(3)'],
      },
      hang: {
        description: 'A command that never finishes',
        command: [process.execPath, '-e', 'setTimeout(() => {}, 10000)'],
        timeoutSeconds: 0.3,
      },
    },
  });
  return createRunAction(settings, { env: { ...process.env, DEPLOY_AUTH: 'Bearer deploy-secret' } });
}

describe('run_action: HTTP actions', () => {
  it('fills the template with validated, URL-encoded parameters and sends it', async () => {
    const out = await run(
      tool(),
      { action: 'restart_service', params: { service: 'payments', env: 'prod' } },
      toolContext({ idempotencyKey: 'run-3:call-1' }),
    );
    expect(out).toMatchObject({ action: 'restart_service', status: 202 });
    const seen = deploy.requests.at(-1);
    expect(seen?.method).toBe('POST');
    expect(seen?.path).toBe('/api/restart/payments?env=prod');
    expect(JSON.parse(seen?.body ?? '')).toEqual({ service: 'payments', reason: 'requested in prod' });
    expect(seen?.headers.authorization).toBe('Bearer deploy-secret');
    expect(seen?.headers['idempotency-key']).toBe('run-3:call-1');
  });

  it('percent-encodes values so they cannot add query parameters or path segments', async () => {
    await run(tool(), { action: 'annotate', params: { note: 'a&admin=1/../#x', count: 2 } });
    expect(deploy.requests.at(-1)?.path).toBe('/api/restart/notes?text=a%26admin%3D1%2F..%2F%23x&n=2');
  });

  it.each(['..', '.'])(
    'refuses %s as a whole path segment, before approval and at execution',
    async (service) => {
      const args = { action: 'service_status', params: { service } };
      const parsed = tool().parameters.safeParse(args);
      expect(parsed.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([
        'params.service: may not make a URL path segment "." or ".." (it would walk out of the declared path)',
      ]);
      await expect(tool().execute(args, toolContext())).rejects.toMatchObject({ code: 'argument_refused' });
    },
  );

  it('allows dots inside a segment and shows the URL exactly as it is requested', async () => {
    const preview = await previewOf(tool(), { action: 'service_status', params: { service: '...' } });
    expect(preview).toContain(`Sends **GET** \`${deploy.url}/api/services/.../restart\``);
    for (const service of ['a.b', '%2e%2e']) {
      await run(tool(), { action: 'service_status', params: { service } }).catch(() => {});
    }
    // `%` is encoded too, so an encoded dot stays text: the server sees the literal `%2e%2e`.
    expect(deploy.requests.slice(-2).map((r) => r.path)).toEqual([
      '/api/services/a.b/restart',
      '/api/services/%252e%252e/restart',
    ]);
  });

  it('previews the exact request and hides secret header values', async () => {
    const preview = await previewOf(tool(), {
      action: 'restart_service',
      params: { service: 'search', env: 'staging' },
    });
    expect(preview).toContain(`Sends **POST** \`${deploy.url}/api/restart/search?env=staging\``);
    expect(preview).toContain('"reason": "requested in staging"');
    expect(preview).toContain('Authorization');
    expect(preview).toContain(`GET ${deploy.url}/health/search`);
    expect(preview).not.toContain('deploy-secret');
  });

  it('verifies with a GET expecting 2xx', async () => {
    const t = tool();
    const ok = await t.verify?.(
      { action: 'restart_service', params: { service: 'payments', env: 'prod' } },
      {},
      toolContext(),
    );
    expect(ok).toEqual({
      ok: true,
      summary: `GET ${deploy.url}/health/payments answered 2xx (attempt 1 of 2)`,
    });
    const bad = await t.verify?.(
      { action: 'restart_service', params: { service: 'search', env: 'prod' } },
      {},
      toolContext(),
    );
    expect(bad).toEqual({
      ok: false,
      summary: `GET ${deploy.url}/health/search failed after 2 attempt(s): HTTP 503`,
    });
  });

  it('says plainly when an action has no verify step', async () => {
    const out = await tool().verify?.(
      { action: 'echo', params: { msg: 'x', loud: true } },
      {},
      toolContext(),
    );
    expect(out).toEqual({ ok: true, summary: 'not verified: action echo declares no verify step' });
  });
});

describe('run_action: parameters', () => {
  it.each([
    [
      'a value outside the enum',
      { action: 'restart_service', params: { service: 'payments', env: 'dev' } },
      'params.env',
    ],
    ['a missing parameter', { action: 'restart_service', params: { service: 'payments' } }, 'params.env'],
    [
      'an unknown parameter',
      { action: 'restart_service', params: { service: 'payments', env: 'prod', force: true } },
      'params',
    ],
    ['an unknown action', { action: 'drop_database', params: {} }, 'action'],
    ['an integer out of range', { action: 'annotate', params: { note: 'x', count: 9 } }, 'params.count'],
    ['a non-integer', { action: 'annotate', params: { note: 'x', count: 1.5 } }, 'params.count'],
    [
      'a string not matching the whole pattern',
      { action: 'annotate', params: { note: 'ok\nrm -rf', count: 1 } },
      'params.note',
    ],
    ['a string for a boolean', { action: 'echo', params: { msg: 'x', loud: 'yes' } }, 'params.loud'],
  ])('rejects %s', (_label, args, where) => {
    const result = tool().parameters.safeParse(args);
    expect(result.success).toBe(false);
    const paths = result.error?.issues.map((i) => i.path.join('.'));
    expect(paths).toContain(where);
  });

  it('describes every action and its parameters to the model', () => {
    const description = tool().description;
    expect(description).toContain(
      '- restart_service(service: payments|search, env: staging|prod): Restart one service',
    );
    expect(description).toContain('count: integer 1..5');
  });

  it('accepts an action without params', () => {
    expect(parseArgs(tool(), { action: 'fail' })).toEqual({ action: 'fail', params: {} });
  });
});

describe('run_action: commands', () => {
  it('passes each parameter as (part of) exactly one argument, never through a shell', async () => {
    const msg = "a b; rm -rf / $(id) `id` | cat 'x' && echo";
    const out = (await run(tool(), { action: 'echo', params: { msg, loud: false } })) as { stdout: string };
    expect(JSON.parse(out.stdout)).toEqual([msg, `prefix-${msg}`, '--loud=false']);
  });

  it('refuses a string value that would read as an option, before approval and at execution', async () => {
    const args = { action: 'echo', params: { msg: '--output /etc/passwd', loud: true } };
    expect(() => parseArgs(tool(), args)).toThrow(/would read as an option/);
    await expect(tool().execute(args, toolContext())).rejects.toMatchObject({ code: 'argument_refused' });
  });

  it('refuses an integer or string that would start an argument with "-" unless the template starts it', async () => {
    const problems = (params: Record<string, unknown>) =>
      tool()
        .parameters.safeParse({ action: 'kill', params })
        .error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`) ?? [];
    expect(problems({ n: -9, name: 'term' })).toEqual([
      'params.n: may not start a command argument with "-" (it would read as an option)',
    ]);
    const args = { action: 'kill', params: { n: 5, name: '-rf' } };
    expect(problems(args.params)).toEqual([]);
    const out = (await run(tool(), args)) as { stdout: string };
    expect(JSON.parse(out.stdout)).toEqual(['5', '--count=5', 'x-rf']);
    await expect(
      tool().execute({ action: 'kill', params: { n: -9, name: 'a' } }, toolContext()),
    ).rejects.toMatchObject({
      code: 'argument_refused',
      message: expect.stringContaining('parameter n may not start'),
    });
  });

  describe('with the Slack and OpenAI keys in the worker environment', () => {
    const secrets = {
      SLACK_BOT_TOKEN: 'xoxb-parent-token',
      OPENAI_API_KEY: 'sk-parent-key',
      DEPLOY_TOKEN: 'dt-1',
    };
    const saved = Object.fromEntries(Object.keys(secrets).map((k) => [k, process.env[k]]));
    beforeAll(() => {
      Object.assign(process.env, secrets);
    });
    afterAll(() => {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    });

    it('gives a command only PATH', async () => {
      const out = (await run(tool(), { action: 'print_env' })) as { stdout: string };
      expect(JSON.parse(out.stdout)).toEqual({ PATH: process.env.PATH });
    });

    it('adds the variables the action declares in envFromEnv, read from the worker environment', async () => {
      const settings = runActionSettings.parse({
        actions: { deploy: { description: 'd', command: PRINT_ENV, envFromEnv: { TOKEN: 'DEPLOY_TOKEN' } } },
      });
      const out = (await run(createRunAction(settings, { env: process.env }), { action: 'deploy' })) as {
        stdout: string;
      };
      expect(JSON.parse(out.stdout)).toEqual({ PATH: process.env.PATH, TOKEN: 'dt-1' });
    });
  });

  it('previews the exact command', async () => {
    const preview = await previewOf(tool(), { action: 'echo', params: { msg: 'hello world', loud: true } });
    expect(preview).toContain("'hello world' 'prefix-hello world' --loud=true");
  });

  it('reports a non-zero exit with the end of stderr', async () => {
    await expect(run(tool(), { action: 'fail' })).rejects.toMatchObject({
      code: 'command_failed',
      message: expect.stringContaining('exited with code 3: disk quota exceeded'),
    });
  });

  it('stops a command at its time limit', async () => {
    const started = Date.now();
    await expect(run(tool(), { action: 'hang' })).rejects.toMatchObject({ code: 'command_timeout' });
    expect(Date.now() - started).toBeLessThan(3000);
  });
});

describe('run_action: settings', () => {
  const base = { description: 'd', params: { service: { enum: ['a'] } } };
  const problems = (action: Record<string, unknown>) => {
    const result = runActionSettings.safeParse({ actions: { x: action } });
    return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };

  it('refuses placeholders that are not declared params', () => {
    expect(problems({ ...base, command: ['kubectl', 'rollout', 'restart', '{svc}'] })).toEqual([
      'actions.x.command.3: unknown placeholder {svc}: not in params',
    ]);
  });

  it('refuses a placeholder in the program or in the URL host', () => {
    expect(problems({ ...base, command: ['{service}'] })[0]).toContain(
      'the program (first element) cannot contain placeholders',
    );
    expect(problems({ ...base, http: { method: 'POST', url: 'https://{service}.example/x' } })[0]).toContain(
      'fixed scheme, host and port',
    );
  });

  it('refuses envFromEnv on an HTTP action and a malformed variable name', () => {
    const http = { method: 'GET', url: 'https://deploy.example/x' };
    expect(problems({ description: 'd', http, envFromEnv: { TOKEN: 'DEPLOY_TOKEN' } })).toEqual([
      'actions.x.envFromEnv: only a command action gets an environment',
    ]);
    expect(
      problems({ description: 'd', command: ['true'], envFromEnv: { TOKEN: 'not a name' } })[0],
    ).toContain('actions.x.envFromEnv.TOKEN: expected the name of an environment variable');
  });

  it('requires exactly one of http or command, and a pattern for strings', () => {
    expect(problems({ ...base })).toEqual(['actions.x: expected exactly one of http or command']);
    expect(problems({ description: 'd', params: { s: { type: 'string' } }, command: ['true'] })[0]).toContain(
      'actions.x.params.s.pattern',
    );
  });
});
