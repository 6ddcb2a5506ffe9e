import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SCALE_POLICY } from '../policy/scale-policy.js';
import { emptyWorkDir, REPO_ROOT, runCli } from './cli-harness.js';

const EXAMPLE = join(REPO_ROOT, 'loopgate.example.yaml');
/** The secrets loopgate.example.yaml names (headersEnv, routingKeyEnv). */
const SECRETS = { GRAFANA_AUTH: 'Bearer g', DEPLOY_API_AUTH: 'Bearer d', PD_ROUTING_KEY: 'pd-key' };

const work = emptyWorkDir();
afterAll(() => work.remove());

describe('loopgate policy test', () => {
  const test = (tool: string, args: unknown, extra: string[] = []) =>
    runCli(['policy', 'test', tool, JSON.stringify(args), '--config', EXAMPLE, ...extra], SECRETS, work.dir);

  it('says which rule decides a call and why the rules before it did not match', async () => {
    const prod = await test('run_action', {
      action: 'restart_service',
      params: { service: 'payments', env: 'prod' },
    });
    expect(prod).toMatchObject({ code: 0, stderr: '' });
    expect(prod.stdout).toBe(
      [
        'run_action {"action":"restart_service","params":{"service":"payments","env":"prod"}}',
        '  rule 1 of run_action (staging restarts): no match: params.env is "prod", expected "staging"',
        '  rule 2 of run_action (prod restarts): matches',
        '=> rule 2 of run_action (prod restarts): asks S0SRELEADS; 2 distinct approvals needed; the requester may not approve; expires after 30 min; reminders at 50%, 90%; escalates to U012MANAGER after 20 min',
        '',
      ].join('\n'),
    );
    const staging = await test('run_action', { action: 'restart_service', params: { env: 'staging' } });
    expect(staging.stdout).toContain('=> allowed by rule 1 of run_action (staging restarts)');
    const denied = await test('post_message', { channel: 'C0OPS', text: 'password: hunter2' });
    expect(denied.stdout).toContain(
      '=> denied by rule 1 of post_message (no credentials): nothing runs; the model is told "Never post credentials in a channel."',
    );
    const none = await test('page_oncall', { summary: 'x' }, ['--json']);
    expect(JSON.parse(none.stdout)).toMatchObject({
      tool: 'page_oncall',
      tried: [],
      decision: {
        kind: 'ask',
        rule: null,
        quorum: 1,
        approvers: { users: ['U012MANAGER'], groups: ['S0SRELEADS'] },
      },
    });
  });

  it('refuses arguments that are not JSON, with exit 2', async () => {
    const bad = await runCli(
      ['policy', 'test', 'run_action', '{nope', '--config', EXAMPLE],
      SECRETS,
      work.dir,
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('the arguments are not JSON');
  });
});

describe('loopgate check-config', () => {
  it('accepts loopgate.example.yaml and summarises tools, approvers, budgets and channels', async () => {
    const result = await runCli(['check-config', EXAMPLE], SECRETS, work.dir);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const out = result.stdout;
    expect(out.startsWith(`OK: ${EXAMPLE}\n`)).toBe(true);
    expect(out).toContain('channels:  C0OPS, C0INCIDENTS');
    expect(out).toContain(
      'approvers: U012MANAGER, S0SRELEADS; self-approval refused; approvals expire after 60 min',
    );
    expect(out).toContain('budgets:   12 steps, 5m 00s active time, 200000 tokens, $0.5;');
    expect(out).toMatch(/\n {4}run_action\s+write\s+approvers: S0SRELEADS\n/);
    // Each tool's rules, in order, then what a call no rule matches gets.
    expect(out).toContain(
      [
        '      rule 1 of run_action (staging restarts): when action = "restart_service" and params.env = "staging" -> allow (runs without a person; audited)',
        '      rule 2 of run_action (prod restarts): when action = "restart_service" and params.env = "prod" -> ask S0SRELEADS, quorum 2, expires after 30 min',
        '      otherwise: ask S0SRELEADS',
      ].join('\n'),
    );
    expect(out).toMatch(/\n {4}page_oncall\s+notify approvers: U012MANAGER, S0SRELEADS\n/);
    // The Slack rate budgets in force (docs/operations.md, "Slack rate limits").
    expect(out).toContain(
      'Slack rate budgets (shared by every process; raise with slack.rateLimits): chat.postMessage: 60/min per channel; Tier 2',
    );
    expect(out).toContain('Tier 3 (chat.update, reactions.add, agents.sessions.setStatus, …): 50/min');
  });

  it('reads the file named by LOOPGATE_CONFIG when no path is given, and prints JSON with --json', async () => {
    const result = await runCli(
      ['check-config', '--json'],
      { ...SECRETS, LOOPGATE_CONFIG: EXAMPLE },
      work.dir,
    );
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout) as {
      ok: boolean;
      warnings: unknown[];
      tools: Array<{ name: string; effect: string; approvers: unknown }>;
      budgets: Record<string, number>;
    };
    expect(summary.ok).toBe(true);
    // The example's rules all apply as written.
    expect(summary.warnings).toEqual([]);
    expect(summary.tools.map((t) => t.name)).toEqual([
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
    expect(summary.tools.find((t) => t.name === 'http_request')?.approvers).toEqual({
      users: [],
      groups: ['S0SRELEADS'],
    });
    expect(summary.budgets).toMatchObject({ maxSteps: 12, deadlineSeconds: 300, maxCostUsd: 0.5 });
  });

  it('takes the secrets from .env in the working directory, like the services', async () => {
    writeFileSync(
      join(work.dir, '.env'),
      Object.entries(SECRETS)
        .map(([k, v]) => `${k}="${v}"`)
        .join('\n'),
    );
    try {
      const result = await runCli(['check-config', EXAMPLE], {}, work.dir);
      expect(result.code).toBe(0);
    } finally {
      writeFileSync(join(work.dir, '.env'), '');
    }
  });

  it("refuses a custom tool's unset secret, naming the tool and the variable, and warns about process.env", async () => {
    const tool = join(REPO_ROOT, 'test/tools/fixtures/custom/reads-env.ts');
    const file = join(work.dir, 'custom.yaml');
    writeFileSync(file, `custom:\n  - ${tool}\n`);
    const missing = await runCli(['check-config', file, '--json'], {}, work.dir);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout).problems).toEqual([
      { key: 'custom[0]', problem: 'reads_env needs environment variable DECLARED_TOKEN, which is not set' },
    ]);
    const set = await runCli(['check-config', file], { DECLARED_TOKEN: 'declared-1' }, work.dir);
    expect(set.code).toBe(0);
    expect(set.stdout).toContain(
      `  warning: custom[0]: ${tool}:12 reads process.env: unchecked and not redacted; list the variable in the tool's secrets and read it with ctx.secret(name)`,
    );
  });

  it('warns about a rule whose operators cannot apply to the argument type, and still exits 0', async () => {
    const file = join(work.dir, 'scale.yaml');
    writeFileSync(file, SCALE_POLICY);
    const text = await runCli(['check-config', file], {}, work.dir);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(
      '  warning: rules.run_action[0].when.params.replicas: > 10 compares numbers, and params.replicas is typed string',
    );
    const asJson = await runCli(['check-config', file, '--json'], {}, work.dir);
    expect(JSON.parse(asJson.stdout).warnings).toEqual([
      {
        key: 'rules.run_action[0].when.params.replicas',
        problem: expect.stringMatching(/^> 10 compares numbers/),
      },
    ]);
  }, 60_000);

  it('warns about a channel rule naming a tool that does not exist (a typo would withhold it, or leave it writable)', async () => {
    const file = join(work.dir, 'channels.yaml');
    writeFileSync(
      file,
      [
        'approvals: { approvers: [U0MGR] }',
        'tools:',
        '  post_message: { channels: [C0OPS] }',
        'channels:',
        '  rules:',
        '    - match: { kind: dm }',
        '      tools: [http_get, post_mesage, "post_*"]',
        '      readOnly: [postmessage]',
        '',
      ].join('\n'),
    );
    const asJson = await runCli(['check-config', file, '--json'], {}, work.dir);
    expect(JSON.parse(asJson.stdout).warnings).toEqual([
      {
        key: 'channels.rules[0].tools[0]',
        problem: '"http_get" matches no tool: the tool it meant is not offered there',
      },
      {
        key: 'channels.rules[0].tools[1]',
        problem: '"post_mesage" matches no tool: the tool it meant is not offered there',
      },
      {
        key: 'channels.rules[0].readOnly[0]',
        problem: '"postmessage" matches no tool: the tool it meant is not made read-only there',
      },
    ]);
  }, 60_000);

  it('names every bad key and exits 1', async () => {
    const bad = join(work.dir, 'bad.yaml');
    writeFileSync(
      bad,
      [
        'budgets:',
        '  maxSteps: 0',
        'approvals:',
        '  selfApproval: sometimes',
        'tools:',
        '  teleport: {}',
      ].join('\n'),
    );
    const result = await runCli(['check-config', bad], {}, work.dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(`loopgate: invalid configuration in ${bad}:`);
    expect(result.stderr).toMatch(/\n {2}budgets\.maxSteps: /);
    expect(result.stderr).toMatch(/\n {2}approvals\.selfApproval: /);
    expect(result.stderr).toMatch(/\n {2}tools\.teleport: /);

    const asJson = await runCli(['check-config', bad, '--json'], {}, work.dir);
    expect(asJson.code).toBe(1);
    const report = JSON.parse(asJson.stdout) as { ok: boolean; problems: Array<{ key: string }> };
    expect(report.ok).toBe(false);
    expect(report.problems.map((p) => p.key)).toEqual(
      expect.arrayContaining(['budgets.maxSteps', 'approvals.selfApproval', 'tools.teleport']),
    );
  });

  it('summarises sub-agents, and names a tool an agent lists that is not enabled', async () => {
    const file = join(work.dir, 'agents.yaml');
    const policy = [
      'tools: { current_time: {} }',
      'agents:',
      '  triage:',
      '    description: Finds out what is wrong.',
      '    prompt: Investigate.',
      '    tools: [current_time]',
      '    budgets: { maxSteps: 4, maxTokens: 20000 }',
    ];
    writeFileSync(file, policy.join('\n'));
    const ok = await runCli(['check-config', file], {}, work.dir);
    expect(ok).toMatchObject({ code: 0, stderr: '' });
    expect(ok.stdout).toContain('agents (1, at most 2 levels deep, 4 at once):');
    expect(ok.stdout).toMatch(
      /\n {4}ask_triage\s+tools: current_time; model: the run's; budgets: 4 steps, 20000 tokens \(capped by what its parent has left\)\n/,
    );
    const json = await runCli(['check-config', file, '--json'], {}, work.dir);
    expect(JSON.parse(json.stdout).agents).toEqual([
      {
        name: 'triage',
        tool: 'ask_triage',
        description: 'Finds out what is wrong.',
        tools: ['current_time'],
        model: null,
        budgets: { maxSteps: 4, maxTokens: 20000 },
      },
    ]);
    writeFileSync(file, policy.join('\n').replace('[current_time]', '[current_time, prometheus_query]'));
    const bad = await runCli(['check-config', file], {}, work.dir);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      'agents.triage.tools[1]: no tool named prometheus_query is enabled (tools: current_time)',
    );
  });

  it('reports the secrets the example names when they are not set', async () => {
    const result = await runCli(['check-config', EXAMPLE], {}, work.dir);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'tools.page_oncall.routingKeyEnv: environment variable PD_ROUTING_KEY is not set',
    );
  });

  it('exits 1 naming the file when it cannot be read, without needing Redis', async () => {
    const result = await runCli(
      ['check-config', join(work.dir, 'missing.yaml')],
      { REDIS_URL: 'redis://127.0.0.1:1' },
      work.dir,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('missing.yaml (ENOENT)');
  });
});

describe('loopgate policy test --at', () => {
  const FREEZES = `
approvals: { approvers: [U0LEAD1, U0LEAD2] }
freezes:
  weekend: { timeZone: Europe/Berlin, weekly: [{ from: "fri 18:00", to: "mon 08:00" }] }
rules:
  post_message:
    - { name: weekend, when: { freeze: weekend }, outcome: ask, quorum: 2 }
tools:
  post_message: { channels: [C0OPS] }
`;
  const at = (when: string, extra: string[] = []) => {
    const path = join(work.dir, 'freezes.yaml');
    writeFileSync(path, FREEZES);
    return runCli(
      ['policy', 'test', 'post_message', '{}', '--config', path, '--at', when, ...extra],
      {},
      work.dir,
    );
  };

  it('judges freezes at the moment given and lists those in force', async () => {
    const saturday = await at('2026-12-05T12:00Z');
    expect(saturday.stdout).toContain('at 2026-12-05 12:00:00Z: freezes in force: weekend\n');
    expect(saturday.stdout).toContain(
      '=> rule 1 of post_message (weekend): asks U0LEAD1, U0LEAD2; 2 distinct approvals needed',
    );
    const monday = await at('2026-12-07T12:00Z', ['--json']);
    expect(JSON.parse(monday.stdout)).toMatchObject({
      at: '2026-12-07 12:00:00Z',
      freezes: [],
      tried: [{ matched: false, miss: 'freeze: expected weekend is in force, no freeze is in force' }],
      decision: { kind: 'ask', rule: null, quorum: 1 },
    });
  });

  it('refuses a time it cannot read, naming --at', async () => {
    const bad = await at('yesterday');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--at: not a time: "yesterday"');
  });
});
