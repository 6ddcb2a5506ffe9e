/**
 * Custom tools from packages and modules with several tools: resolution from the project's node_modules,
 * declared secrets (refused when unset, readable only when declared), the guarded `ctx.http`, and failures
 * from another copy of loopgate keeping their code.
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/errors.js';
import { loadPolicy, parsePolicy } from '../../src/config/policy.js';
import { secretRedactor } from '../../src/log/redact.js';
import { buildTools, customToolSecrets } from '../../src/tools/registry.js';
import { type HttpFixture, reply, startHttpFixture } from '../fakes/http-fixtures.js';
import { run, toolContext } from './tool-harness.js';

const fixture = (name: string) => resolve('test/tools/fixtures/custom', name);

function policyOf(custom: unknown[]) {
  return parsePolicy(JSON.stringify({ custom }), { env: {}, source: 'test.yaml' });
}

describe('a module with several tools', () => {
  let service: HttpFixture;
  beforeAll(async () => {
    service = await startHttpFixture((req, res) =>
      reply(res, 200, 'text/plain', `auth=${req.headers.authorization ?? ''}`),
    );
  });
  afterAll(() => service.close());

  const build = (env: Record<string, string>) =>
    buildTools(
      policyOf([
        { path: fixture('several-tools.ts'), allow: [{ prefix: `${service.url}/ok/`, allowPrivate: true }] },
      ]),
      { env },
    );

  it('loads the default list and the named tools, not the helper', async () => {
    const tools = await build({ PING_TOKEN: 'ping-token-1' });
    expect([...tools.keys()].sort()).toEqual(['fail_foreign', 'peek_secret', 'ping_service']);
  });

  it('refuses to start when a declared secret is unset, naming the tool and the variable', async () => {
    const err = await build({}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual([
      { key: 'custom[0]', problem: 'ping_service needs environment variable PING_TOKEN, which is not set' },
    ]);
  });

  it('gives a declared secret and the thread to the tool, through the allowlisted HTTP client', async () => {
    const tools = await build({ PING_TOKEN: 'ping-token-1' });
    const ping = tools.get('ping_service')!;
    const ctx = toolContext({ threadId: 'C1:1.2' });
    expect(await run(ping, { url: `${service.url}/ok/x` }, ctx)).toEqual({
      status: 200,
      body: 'auth=ping-token-1',
      thread: 'C1:1.2',
    });
  });

  it('refuses a URL outside the allowlist with a code the model reads', async () => {
    const tools = await build({ PING_TOKEN: 'ping-token-1' });
    await expect(run(tools.get('ping_service')!, { url: `${service.url}/other` })).rejects.toMatchObject({
      code: 'url_not_allowed',
    });
  });

  it('refuses a private address unless the prefix says allowPrivate', async () => {
    const tools = await buildTools(
      policyOf([{ path: fixture('several-tools.ts'), allow: [`${service.url}/`] }]),
      {
        env: { PING_TOKEN: 'ping-token-1' },
      },
    );
    await expect(run(tools.get('ping_service')!, { url: `${service.url}/ok/x` })).rejects.toMatchObject({
      code: 'private_address',
    });
  });

  it('throws when a tool reads a secret it did not declare', async () => {
    const tools = await build({ PING_TOKEN: 'ping-token-1' });
    await expect(run(tools.get('peek_secret')!, {})).rejects.toThrow(
      'peek_secret read secret PING_TOKEN, which it does not list in secrets',
    );
  });

  it("keeps the code and class of a failure thrown with another copy's error class", async () => {
    const tools = await build({ PING_TOKEN: 'ping-token-1' });
    await expect(run(tools.get('fail_foreign')!, {})).rejects.toMatchObject({
      name: 'ToolFailure',
      code: 'crm_down',
      transient: true,
    });
  });
});

describe('declared secrets in the redaction set', () => {
  it("gives the worker's redactor the values of every declared secret that is set", async () => {
    const policy = policyOf([fixture('several-tools.ts'), fixture('reads-env.ts')]);
    const values = await customToolSecrets(policy, {
      PING_TOKEN: 'ping-token-1',
      DECLARED_TOKEN: 'declared-2',
      OTHER: 'other-value-3',
    });
    expect(values.sort()).toEqual(['declared-2', 'ping-token-1']);
    const redact = secretRedactor(values);
    expect(redact.text('auth ping-token-1 and other-value-3')).toBe('auth [redacted] and other-value-3');
  });
});

describe('a tool package', () => {
  let project: string;
  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), 'loopgate-pkg-'));
    const pkg = join(project, 'node_modules', '@acme', 'loopgate-tools');
    await mkdir(join(pkg, 'dist'), { recursive: true });
    await symlink(resolve('node_modules/zod'), join(project, 'node_modules', 'zod'), 'dir');
    await writeFile(
      join(pkg, 'package.json'),
      JSON.stringify({
        name: '@acme/loopgate-tools',
        type: 'module',
        exports: { '.': { types: './dist/index.d.ts', import: './dist/index.js' } },
      }),
    );
    await writeFile(
      join(pkg, 'dist', 'index.js'),
      `import { z } from 'zod';
export const acmeStatus = { name: 'acme_status', description: 'Status of Acme.', parameters: z.object({}),
  effect: 'read', async execute() { return { status: 'green' }; } };
export const acmeRestart = { name: 'acme_restart', description: 'Restart Acme.', parameters: z.object({}),
  effect: 'write', async execute() { return { restarted: true }; } };
`,
    );
    await mkdir(join(project, 'config'));
    await writeFile(
      join(project, 'config', 'loopgate.yaml'),
      'approvals: { approvers: [U0APPROVER] }\ncustom:\n  - "@acme/loopgate-tools"\n',
    );
    await writeFile(join(project, 'config', 'missing.yaml'), 'custom:\n  - "@acme/not-installed"\n');
  });
  afterAll(() => rm(project, { recursive: true, force: true }));

  it('resolves a package name from the node_modules above the policy file, for import-only exports', async () => {
    const policy = await loadPolicy(join(project, 'config', 'loopgate.yaml'), { env: {} });
    expect(policy.custom[0]).toMatchObject({
      package: '@acme/loopgate-tools',
      path: join(project, 'node_modules', '@acme', 'loopgate-tools', 'dist', 'index.js'),
    });
    const tools = await buildTools(policy, { env: {} });
    expect([...tools.keys()].sort()).toEqual(['acme_restart', 'acme_status']);
    expect(await tools.get('acme_status')!.execute({}, toolContext())).toEqual({ status: 'green' });
  });

  it('names a package that is not installed', async () => {
    await expect(loadPolicy(join(project, 'config', 'missing.yaml'), { env: {} })).rejects.toThrow(
      `custom[0]: package @acme/not-installed is not installed in a node_modules folder above ${join(project, 'config')}`,
    );
  });
});
