import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/errors.js';
import { loadPolicy, parsePolicy } from '../../src/config/policy.js';
import { configuredSecrets } from '../../src/config/policy-env.js';
import { approversFor, limitsFromPolicy, retryFor } from '../../src/config/policy-limits.js';
import { DEFAULT_LIMITS } from '../../src/loop/state.js';
import { buildTools } from '../../src/tools/registry.js';

const EXAMPLE_ENV = { GRAFANA_AUTH: 'x', DEPLOY_API_AUTH: 'y', PD_ROUTING_KEY: 'z' };

/** The problems of a policy that must not parse, as `key: problem` lines. */
function problems(yaml: string, env: Record<string, string> = {}): string[] {
  try {
    parsePolicy(yaml, { env });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems.map((p) => `${p.key}: ${p.problem}`);
  }
  throw new Error('expected the policy to be refused');
}

describe('parsePolicy', () => {
  it('accepts an empty file with defaults and no tools', () => {
    const policy = parsePolicy('', { env: {} });
    expect(policy.tools).toEqual({});
    expect(policy.approvals).toEqual({
      approvers: [],
      selfApproval: false,
      expiresAfterMinutes: 60,
      mode: 'enforce',
      oncallCacheSeconds: 60,
      remindAtPercent: [],
      trusted: [],
    });
    expect(policy.rules).toEqual({});
    expect(policy.channels).toEqual({ allow: [], prompt: {}, shadow: [], rules: [] });
    expect(policy.custom).toEqual([]);
  });

  it('names the exact key and what is expected', () => {
    expect(problems('tools:\n  http_get:\n    allow: ["ftp://files.example/"]\n')).toEqual([
      'tools.http_get.allow[0]: expected an http(s) URL prefix (scheme and host, no credentials, query or fragment)',
    ]);
    expect(problems('approvals:\n  approvers: [U012OK, alice]\n')).toEqual([
      'approvals.approvers[1]: expected a Slack user id (U…/W…) or user group id (S…)',
    ]);
  });

  it('reports every problem at once, including unknown keys and missing secrets', () => {
    const yaml = `
budgets: { maxSteps: 0, deadlineSecs: 10 }
approvals: { approvers: [U012MANAGER], selfApproval: "no" }
tools:
  http_gett: { allow: ["https://x.example/"] }
  page_oncall: { routingKeyEnv: PD_ROUTING_KEY }
  http_get:
    allow:
      - { prefix: "https://x.example/", headersEnv: { Authorization: X_AUTH }, allowPrivate: 1 }
surprise: true
`;
    const found = problems(yaml);
    expect(found).toEqual(
      expect.arrayContaining([
        'budgets.maxSteps: expected at least 1',
        expect.stringMatching(/^budgets\.deadlineSecs: unknown key/),
        'approvals.selfApproval: expected true or false',
        expect.stringMatching(/^tools\.http_gett: unknown key \(expected one of: http_get, http_request, /),
        'tools.http_get.allow[0].allowPrivate: expected true or false',
        expect.stringMatching(/^surprise: unknown key \(expected one of: model, budgets, /),
        'tools.page_oncall.routingKeyEnv: environment variable PD_ROUTING_KEY is not set',
        'tools.http_get.allow[0].headersEnv.Authorization: environment variable X_AUTH is not set',
      ]),
    );
    expect(found).toHaveLength(8);
  });

  it('refuses to start when a variable a command action reads with envFromEnv is unset', () => {
    const yaml = `
tools:
  run_action:
    approvers: [S0LEADS]
    actions:
      deploy: { description: d, command: [deployctl], envFromEnv: { TOKEN: DEPLOY_TOKEN } }
`;
    expect(problems(yaml)).toEqual([
      'tools.run_action.actions.deploy.envFromEnv.TOKEN: environment variable DEPLOY_TOKEN is not set',
    ]);
    expect(() => parsePolicy(yaml, { env: { DEPLOY_TOKEN: 't' } })).not.toThrow();
  });

  it("lists the values of loopgate's secrets and of every variable the parsed policy names", () => {
    const yaml = `
tools:
  page_oncall: { routingKeyEnv: PD_ROUTING_KEY, approvers: [S0LEADS] }
  http_get: { allow: [{ prefix: "https://x.example/", headersEnv: { Authorization: X_AUTH } }] }
  run_action:
    approvers: [S0LEADS]
    actions:
      deploy: { description: d, command: [deployctl], envFromEnv: { TOKEN: DEPLOY_TOKEN } }
`;
    const env = {
      PD_ROUTING_KEY: 'pd',
      X_AUTH: 'xa',
      DEPLOY_TOKEN: 'dt',
      SLACK_BOT_TOKEN: 'xoxb-1',
      OPENAI_API_KEY: 'sk',
      REDIS_URL: 'redis://h:6379',
    };
    expect(configuredSecrets(parsePolicy(yaml, { env }), env).sort()).toEqual(
      ['dt', 'pd', 'sk', 'xa', 'xoxb-1'].sort(),
    );
  });

  it('says where a YAML syntax error is', () => {
    expect(problems('tools:\n  http_get: { allow: [\n')[0]).toMatch(/^line \d+, column \d+: /);
  });

  it('requires approvers for enabled write and notify tools', () => {
    expect(problems('tools:\n  post_message: { channels: [C0OPS] }\n')).toEqual([
      'approvals.approvers: required: post_message (notify) is enabled and has no approvers of its own (tools.post_message.approvers)',
    ]);
    expect(() =>
      parsePolicy('tools:\n  post_message: { channels: [C0OPS], approvers: [S0LEADS] }\n', { env: {} }),
    ).not.toThrow();
  });

  it('refuses a cost budget without prices, and channel prompts for channels not allowed', () => {
    expect(
      problems('budgets: { maxCostUsd: 1 }\nchannels: { allow: [C0OPS], prompt: { C0OTHER: hi } }\n'),
    ).toEqual([
      'budgets.maxCostUsd: needs model.prices (or model.defaultPrice) to compute what a run costs',
      'channels.prompt.C0OTHER: this channel is not in channels.allow',
    ]);
  });

  it("validates run_action declarations with the action's key path", () => {
    const yaml = `
approvals: { approvers: [U1AB] }
tools:
  run_action:
    actions:
      restart:
        description: Restart
        params: { service: { enum: [a, b] }, n: { type: float } }
        command: [systemctl, restart, "{svc}"]
`;
    expect(problems(yaml)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^tools\.run_action\.actions\.restart\.params\.n\.type: /),
      ]),
    );
    const placeholders = problems(yaml.replace('n: { type: float }', 'n: { type: integer, min: 1 }'));
    expect(placeholders).toEqual([
      'tools.run_action.actions.restart.command[2]: unknown placeholder {svc}: not in params',
    ]);
  });

  it('needs a name to give a custom tool its own approvers', () => {
    expect(problems('custom: [{ path: ./t.ts, approvers: [U1AB] }]\n')).toEqual([
      'custom[0].name: approvers of a custom tool need its name (name: <tool name>)',
    ]);
  });

  it('accepts the short price form for the configured model, which then needs a name', () => {
    const policy = parsePolicy('model: { name: m1, prices: { input_per_mtok: 1, output_per_mtok: 2 } }\n', {
      env: {},
    });
    expect(policy.model.prices).toEqual({ m1: { input_per_mtok: 1, output_per_mtok: 2 } });
    expect(problems('model: { prices: { input_per_mtok: 1, output_per_mtok: 2 } }\n')).toEqual([
      'model.name: required when prices is one { input_per_mtok, output_per_mtok } (it is the price of this model)',
    ]);
  });

  it('enables a tool without settings by its key alone', () => {
    expect(parsePolicy('tools:\n  current_time:\n', { env: {} }).tools).toEqual({ current_time: {} });
  });

  it('resolves relative paths against the base directory', () => {
    const policy = parsePolicy('tools: { search_runbooks: { dir: ./rb } }\ncustom: [./t/x.ts, /abs/y.js]\n', {
      env: {},
      baseDir: '/srv/loopgate',
    });
    expect(policy.tools.search_runbooks?.dir).toBe('/srv/loopgate/rb');
    expect(policy.custom.map((c) => c.path)).toEqual(['/srv/loopgate/t/x.ts', '/abs/y.js']);
  });

  it('holds only the names of secrets, never their values', () => {
    const policy = parsePolicy(
      'approvals: { approvers: [U1AB] }\ntools: { page_oncall: { routingKeyEnv: PD_KEY } }\n',
      {
        env: { PD_KEY: 'pd-secret-value' },
      },
    );
    expect(JSON.stringify(policy)).not.toContain('pd-secret-value');
    expect(policy.tools.page_oncall?.routingKeyEnv).toBe('PD_KEY');
  });
});

describe('the example policy file', () => {
  it('loads, with its runbooks and custom tool found', async () => {
    const policy = await loadPolicy('loopgate.example.yaml', { env: EXAMPLE_ENV });
    expect(Object.keys(policy.tools).sort()).toEqual(
      [
        'current_time',
        'http_get',
        'http_request',
        'page_oncall',
        'post_message',
        'prometheus_query',
        'run_action',
        'search_runbooks',
      ].sort(),
    );
    expect(policy.tools.search_runbooks?.dir).toBe(resolve('runbooks'));
    expect(policy.custom).toEqual([]);
    expect(policy.slack.suggestedPrompts.title).toBe('Ask loopgate about production');
    expect(policy.slack.suggestedPrompts.dm.map((p) => p.title)).toEqual([
      'Payments health',
      'Recent deploys',
    ]);
    expect(policy.slack.suggestedPrompts.channel).toHaveLength(1);
  });
});

describe('limitsFromPolicy', () => {
  it("keeps the engine's defaults for what the policy does not set", () => {
    const limits = limitsFromPolicy(parsePolicy('', { env: {} }));
    expect(limits).toEqual({
      ...DEFAULT_LIMITS,
      context: {
        windowTokens: 128_000,
        compactAtPercent: 70,
        summaryTokens: 4_096,
        maxStoredResultBytes: 1_000_000,
        maxStoredBytesPerRun: 4_000_000,
      },
    });
  });

  it('maps budgets and prices, pricing unlisted models like the most expensive one', async () => {
    const policy = await loadPolicy('loopgate.example.yaml', { env: EXAMPLE_ENV });
    const limits = limitsFromPolicy(policy);
    expect(limits).toMatchObject({
      maxSteps: 12,
      deadlineMs: 300_000,
      maxTokens: 200_000,
      maxCostUsd: 0.5,
      maxConsecutiveToolErrors: 3,
      maxToolCallsPerReply: 16,
      maxGatedCallsPerPause: 5,
      maxObservationChars: 16_000,
      toolTimeoutMs: 30_000,
      prices: {
        'gpt-4.1-mini': { inputPerMTok: 0.4, outputPerMTok: 1.6 },
        'gpt-4.1': { inputPerMTok: 2, outputPerMTok: 8 },
      },
      defaultPrice: { inputPerMTok: 2, outputPerMTok: 8 },
    });
  });
});

describe('context window', () => {
  it("takes the model's known window, by name or dated snapshot, and 128000 for an unknown model", () => {
    const windowOf = (yaml: string, envModel?: string) =>
      limitsFromPolicy(parsePolicy(yaml, { env: {} }), envModel).context?.windowTokens;
    expect(windowOf('model: { name: gpt-4.1-mini }')).toBe(1_047_576);
    expect(windowOf('model: { name: gpt-4o-mini-2024-07-18 }')).toBe(128_000);
    expect(windowOf('model: { name: openai/o4-mini }')).toBe(200_000);
    expect(windowOf('model: { name: gpt-5-mini }')).toBe(272_000);
    expect(windowOf('model: { name: llama-3.3-70b }')).toBe(128_000);
    // No model in the file: the environment's OPENAI_MODEL decides.
    expect(windowOf('', 'gpt-4.1')).toBe(1_047_576);
  });

  it('keeps requests within the smallest window of the primary and its fallbacks', () => {
    const limits = limitsFromPolicy(
      parsePolicy(
        [
          'model:',
          '  name: gpt-4.1',
          '  contextTokens: 300000',
          '  compactAtPercent: 60',
          '  fallbacks:',
          '    - { name: gpt-4o }',
          '    - { name: local-llm, contextTokens: 32000 }',
          'budgets: { maxStoredResultBytes: 200000, maxStoredBytesPerRun: 800000 }',
        ].join('\n'),
        { env: {} },
      ),
    );
    expect(limits.context).toEqual({
      windowTokens: 32_000,
      compactAtPercent: 60,
      summaryTokens: 1_600,
      maxStoredResultBytes: 200_000,
      maxStoredBytesPerRun: 800_000,
    });
  });

  it('refuses a window below 1000 tokens and a threshold outside 10-95 %, naming the key', () => {
    expect(() => parsePolicy('model: { contextTokens: 500 }', { env: {} })).toThrow(/model\.contextTokens/);
    expect(() => parsePolicy('model: { compactAtPercent: 99 }', { env: {} })).toThrow(
      /model\.compactAtPercent: expected at most 95/,
    );
    expect(() => parsePolicy('model: { fallbacks: [{ name: x, contextTokens: 1.5 }] }', { env: {} })).toThrow(
      /model\.fallbacks\[0\]\.contextTokens|model\.fallbacks\.0\.contextTokens/,
    );
  });
});

describe('flood caps', () => {
  it('maps budgets.maxToolCallsPerReply and budgets.maxGatedCallsPerPause, refusing 0', () => {
    const limits = limitsFromPolicy(
      parsePolicy('budgets: { maxToolCallsPerReply: 8, maxGatedCallsPerPause: 2 }\n', { env: {} }),
    );
    expect(limits).toMatchObject({ maxToolCallsPerReply: 8, maxGatedCallsPerPause: 2 });
    expect(() => parsePolicy('budgets: { maxGatedCallsPerPause: 0 }\n', { env: {} })).toThrow(
      /budgets\.maxGatedCallsPerPause/,
    );
  });
});

describe('approversFor', () => {
  it("uses the tool's own approvers, else the default, split into users and groups", async () => {
    const policy = await loadPolicy('loopgate.example.yaml', { env: EXAMPLE_ENV });
    expect(approversFor(policy, 'http_request')).toEqual({ users: [], groups: ['S0SRELEADS'] });
    expect(approversFor(policy, 'page_oncall')).toEqual({ users: ['U012MANAGER'], groups: ['S0SRELEADS'] });
    expect(approversFor(policy, 'lookup_customer')).toEqual({
      users: ['U012MANAGER'],
      groups: ['S0SRELEADS'],
    });
  });

  it('finds a custom tool by its declared name', () => {
    const policy = parsePolicy('custom: [{ path: ./x.ts, name: refund, approvers: [W0FINANCE, S0FIN] }]\n', {
      env: {},
    });
    expect(approversFor(policy, 'refund')).toEqual({ users: ['W0FINANCE'], groups: ['S0FIN'] });
  });
});

describe('loadPolicy', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'loopgate-policy-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('names the file and the missing runbook directory and custom module', async () => {
    const path = join(dir, 'policy.yaml');
    await writeFile(path, 'tools: { search_runbooks: { dir: ./none } }\ncustom: [./missing.ts]\n');
    const err = await loadPolicy(path, { env: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toContain(`invalid configuration in ${path}`);
    expect((err as ConfigError).problems).toEqual([
      { key: 'tools.search_runbooks.dir', problem: `no directory at ${join(dir, 'none')}` },
      { key: 'custom[0]', problem: `no file at ${join(dir, 'missing.ts')}` },
    ]);
  });

  it('says when the file cannot be read', async () => {
    await expect(loadPolicy(join(dir, 'absent.yaml'))).rejects.toThrow(
      /cannot read .*absent\.yaml \(ENOENT\)/,
    );
  });
});

describe('tools.<name>.retry', () => {
  it('sets the retries of a read or idempotent tool, with defaults for the waits', async () => {
    const policy = parsePolicy(
      [
        'tools:',
        '  http_get: { allow: ["https://status.example/"], retry: { attempts: 5, maxDelayMs: 2000 } }',
        '  prometheus_query: { url: "http://prom:9090" }',
      ].join('\n'),
      { env: {} },
    );
    expect(retryFor(policy, 'http_get')).toEqual({ attempts: 5, initialDelayMs: 250, maxDelayMs: 2000 });
    expect(retryFor(policy, 'prometheus_query')).toBeUndefined();
    const tools = await buildTools(policy, { env: {} });
    expect(tools.get('http_get')?.retry).toEqual({ attempts: 5, initialDelayMs: 250, maxDelayMs: 2000 });
    expect(tools.get('prometheus_query')?.retry).toBeUndefined();
  });

  it('refuses bad retry settings, naming the key', () => {
    const err = (() => {
      try {
        parsePolicy(
          'tools:\n  http_get: { allow: ["https://s.example/"], retry: { attempts: 0, initialDelayMs: 900, maxDelayMs: 100 } }',
          { env: {} },
        );
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    const text = String((err as Error).message);
    expect(text).toContain('tools.http_get.retry.attempts');
    expect(text).toContain('tools.http_get.retry.maxDelayMs');
  });
});

describe('model.fallbacks', () => {
  it('lists models tried after the primary, each with its own endpoint and key variable', () => {
    const yaml = [
      'model:',
      '  name: gpt-main',
      '  fallbacks:',
      '    - name: gpt-small',
      '    - { name: llama-3, baseUrl: "http://vllm.internal:8000/v1", apiKeyEnv: VLLM_KEY }',
    ].join('\n');
    expect(parsePolicy(yaml, { env: { VLLM_KEY: 'k' } }).model.fallbacks).toEqual([
      { name: 'gpt-small' },
      { name: 'llama-3', baseUrl: 'http://vllm.internal:8000/v1', apiKeyEnv: 'VLLM_KEY' },
    ]);
    expect(problems(yaml)).toEqual([
      'model.fallbacks[1].apiKeyEnv: environment variable VLLM_KEY is not set',
    ]);
    expect(problems('model:\n  fallbacks: [{ baseUrl: "ftp://x" }]')).toEqual([
      expect.stringMatching(/^model\.fallbacks\[0\]\.name: /),
      expect.stringMatching(/^model\.fallbacks\[0\]\.baseUrl: expected an http\(s\) URL/),
    ]);
  });
});
