import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import lookupCustomer from '../../examples/tools/lookup-customer.js';
import { ConfigError } from '../../src/config/errors.js';
import { loadPolicy, parsePolicy } from '../../src/config/policy.js';
import { toolSchema } from '../../src/loop/tool-schemas.js';
import type { SlackPoster } from '../../src/tools/ports.js';
import { buildTools } from '../../src/tools/registry.js';
import { type HttpFixture, reply, startHttpFixture } from '../fakes/http-fixtures.js';
import { run } from './tool-harness.js';

const ENV = { GRAFANA_AUTH: 'g', DEPLOY_API_AUTH: 'd', PD_ROUTING_KEY: 'p' };
const slack: SlackPoster = { postMessage: async () => ({ ts: '1.2' }) };
const fixture = (name: string) => resolve('test/tools/fixtures/custom', name);

/** A policy with only custom tools, given as absolute paths. */
function customPolicy(entries: unknown[], approvers: string[] = []) {
  const yaml = JSON.stringify({ approvals: { approvers }, custom: entries });
  return parsePolicy(yaml, { env: {}, source: 'test.yaml' });
}

async function buildError(policy: ReturnType<typeof customPolicy>): Promise<ConfigError> {
  const err = await buildTools(policy, { env: {} }).catch((e: unknown) => e);
  if (!(err instanceof ConfigError)) throw new Error(`expected a ConfigError, got ${String(err)}`);
  return err;
}

describe('buildTools', () => {
  it('builds every tool the example policy enables', async () => {
    const policy = await loadPolicy('loopgate.example.yaml', { env: ENV });
    const tools = await buildTools(policy, { env: ENV, slack });
    expect([...tools.keys()]).toEqual([
      'http_get',
      'http_request',
      'search_runbooks',
      'read_runbook',
      'prometheus_query',
      'current_time',
      'post_message',
      'page_oncall',
      'run_action',
    ]);
    const effects = Object.fromEntries([...tools.values()].map((t) => [t.name, t.effect]));
    expect(effects).toMatchObject({
      http_request: 'write',
      run_action: 'write',
      post_message: 'notify',
      page_oncall: 'notify',
    });
  });

  it('gives the model an object JSON Schema for every built-in tool', async () => {
    const policy = await loadPolicy('loopgate.example.yaml', { env: ENV });
    for (const tool of (await buildTools(policy, { env: ENV, slack })).values()) {
      const schema = toolSchema(tool);
      expect(schema.parameters.type, tool.name).toBe('object');
      expect(tool.description.length, tool.name).toBeGreaterThan(40);
    }
  });

  it('enables nothing that is not configured', async () => {
    expect((await buildTools(parsePolicy('', { env: {} }))).size).toBe(0);
  });

  it('refuses post_message without a Slack poster', async () => {
    const policy = parsePolicy(
      'approvals: { approvers: [U1AB] }\ntools: { post_message: { channels: [C0OPS] } }\n',
      {
        env: {},
        source: 'p.yaml',
      },
    );
    await expect(buildTools(policy, {})).rejects.toThrow(
      /tools\.post_message: enabled, but this process was given no Slack poster/,
    );
  });

  it('refuses a secret that vanished from the environment after loading', async () => {
    const policy = parsePolicy(
      'approvals: { approvers: [U1AB] }\ntools: { page_oncall: { routingKeyEnv: PD_KEY } }\n',
      {
        env: { PD_KEY: 'x' },
      },
    );
    await expect(buildTools(policy, { env: {} })).rejects.toThrow(/PD_KEY is not set/);
  });
});

describe('custom tools', () => {
  let crm: HttpFixture;
  beforeAll(async () => {
    crm = await startHttpFixture((req, res) => {
      if (req.path === '/customers/cus_1234abcd') {
        return reply(
          res,
          200,
          'application/json',
          JSON.stringify({ name: 'Acme', plan: 'pro', status: 'active' }),
        );
      }
      reply(res, 404, 'application/json', '{}');
    });
  });

  afterAll(async () => {
    await crm.close();
  });

  it('runs the documented example tool', async () => {
    const env = { CRM_API_URL: crm.url, CRM_API_TOKEN: 'crm-token' };
    const entry = {
      path: resolve('examples/tools/lookup-customer.ts'),
      allow: [{ prefix: `${crm.url}/customers/`, allowPrivate: true }],
    };
    const tools = await buildTools(customPolicy([entry]), { env });
    const tool = tools.get('lookup_customer');
    if (!tool) throw new Error('lookup_customer was not built');
    expect(tool.description).toBe(lookupCustomer.description);
    expect(await run(tool, { customerId: 'cus_1234abcd' })).toEqual({
      customerId: 'cus_1234abcd',
      name: 'Acme',
      plan: 'pro',
      status: 'active',
    });
    expect(crm.requests.at(-1)?.headers.authorization).toBe('Bearer crm-token');
    await expect(run(tool, { customerId: 'cus_nope0000' })).rejects.toMatchObject({
      code: 'invalid_input',
      message: 'no customer cus_nope0000',
    });
  });

  it('accepts a named `tool` export', async () => {
    const tools = await buildTools(customPolicy([fixture('named-export.ts')]), { env: {} });
    expect([...tools.keys()]).toEqual(['echo_text']);
  });

  it('stops with an error naming the file for a module that is not a tool', async () => {
    const err = await buildError(customPolicy([fixture('bad-shape.ts')]));
    expect(err.source).toBe(fixture('bad-shape.ts'));
    expect(err.message).toContain('does not export a valid tool');
    expect(err.message).toContain('name: expected letters, digits');
    expect(err.message).toContain('parameters: expected a zod schema');
    expect(err.message).toContain('effect:');
    expect(err.message).toContain('execute: expected a function');
  });

  it.each([
    ['no-export.ts', 'exports no tool'],
    ['throws-on-import.ts', 'cannot import it: boom while importing'],
    ['string-params.ts', 'parameters must be a z.object(...) schema'],
  ])('names the file when %s fails to load', async (file, message) => {
    const err = await buildError(customPolicy([fixture(file)]));
    expect(err.message).toContain(fixture(file));
    expect(err.message).toContain(message);
  });

  it('refuses a name taken by another tool, a mismatched declared name, and a gated tool without approvers', async () => {
    const policy = parsePolicy(
      JSON.stringify({
        tools: { current_time: {} },
        custom: [
          fixture('duplicate-name.ts'),
          { path: fixture('named-export.ts'), name: 'echo' },
          fixture('gated-write.ts'),
        ],
      }),
      { env: {}, source: 'test.yaml' },
    );
    const err = await buildError(policy);
    expect(err.problems).toEqual([
      { key: 'custom[0]', problem: 'a tool named current_time already exists' },
      { key: 'custom[1].name', problem: "is echo but the module's tools are named echo_text" },
      {
        key: 'custom[2]',
        problem: 'issue_refund (write) has no approvers: set approvals.approvers or its own',
      },
    ]);
  });

  it("refuses a custom tool named like loopgate's own read_result", async () => {
    const err = await buildError(customPolicy([fixture('read-result-name.ts')]));
    expect(err.problems).toEqual([
      { key: 'custom[0]', problem: "read_result is loopgate's own tool for long results: rename this one" },
    ]);
  });

  it('loads a gated custom tool that has approvers', async () => {
    const tools = await buildTools(customPolicy([fixture('gated-write.ts')], ['S0FINANCE']), { env: {} });
    expect(tools.get('issue_refund')?.effect).toBe('write');
  });
});
