import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/errors.js';
import { parsePolicy } from '../../src/config/policy.js';
import { conditionMiss, conditionSchema, globMatch, valueAt } from '../../src/policy/conditions.js';
import { decideGate, explainGate } from '../../src/policy/gate.js';
import { SCALE_POLICY } from './scale-policy.js';

/** A policy with run_action and post_message enabled, plus `yaml` appended. */
function policyWith(yaml: string) {
  return parsePolicy(
    `
approvals:
  approvers: [U0MGR]
  expiresAfterMinutes: 60
  trusted: [run_action]
tools:
  post_message: { channels: [C0INCIDENTS, C0OPS] }
  run_action:
    actions:
      restart_service:
        description: Restart one service
        params: { service: { enum: [payments, search] }, env: { enum: [staging, prod] } }
        http: { method: POST, url: "https://deploy.example/restart/{service}?env={env}" }
${yaml}`,
    { env: {} },
  );
}

function problems(yaml: string): string[] {
  try {
    policyWith(yaml);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems.map((p) => `${p.key}: ${p.problem}`);
  }
  throw new Error('expected the policy to be refused');
}

const RULES = `
rules:
  run_action:
    - name: staging restarts
      when: { action: restart_service, params.env: staging }
      outcome: allow
    - name: prod restarts
      when: { params.env: prod }
      outcome: ask
      approvers: [S0SRELEADS]
      quorum: 2
      expiresAfterMinutes: 30
  post_message:
    - when: { text: { regex: "(?i)pass(word)?" } }
      outcome: deny
      reason: never post credentials
    - when: { channel: C0INCIDENTS }
      outcome: ask
      grant: { args: [channel], maxMinutes: 60 }
`;

describe('rules: first match wins', () => {
  const policy = policyWith(RULES);

  it('allows by the first matching rule, naming it', () => {
    expect(
      decideGate(policy, 'run_action', {
        action: 'restart_service',
        params: { service: 'search', env: 'staging' },
      }),
    ).toEqual({
      kind: 'allow',
      rule: { index: 0, name: 'staging restarts', label: 'rule 1 of run_action (staging restarts)' },
    });
  });

  it("asks the rule's approvers, quorum and expiry", () => {
    const d = decideGate(policy, 'run_action', { action: 'restart_service', params: { env: 'prod' } });
    expect(d).toMatchObject({
      kind: 'ask',
      rule: { index: 1, label: 'rule 2 of run_action (prod restarts)' },
      approvers: { users: [], groups: ['S0SRELEADS'] },
      quorum: 2,
      expiresAfterMs: 30 * 60_000,
      grant: null,
    });
  });

  it("no rule matches: the tool's default (its approvers, one of them, the approvals defaults)", () => {
    const d = decideGate(policy, 'run_action', { action: 'other', params: { env: 'dev' } });
    expect(d).toEqual({
      kind: 'ask',
      rule: null,
      approvers: { users: ['U0MGR'], groups: [] },
      quorum: 1,
      selfApproval: false,
      expiresAfterMs: 60 * 60_000,
      remindAtPercent: [],
      escalation: null,
      grant: null,
    });
    // A tool without rules at all gets the same default.
    expect(decideGate(policy, 'page_oncall', {})).toMatchObject({ kind: 'ask', rule: null, quorum: 1 });
  });

  it('an earlier rule wins over a later one that also matches', () => {
    const d = decideGate(policy, 'post_message', { channel: 'C0INCIDENTS', text: 'the password is x' });
    expect(d).toMatchObject({ kind: 'deny', reason: 'never post credentials', rule: { index: 0 } });
    expect(decideGate(policy, 'post_message', { channel: 'C0INCIDENTS', text: 'status: ok' })).toMatchObject({
      kind: 'ask',
      rule: { index: 1 },
      grant: { args: ['channel'], maxMinutes: 60 },
    });
  });

  it('explains which rule decides and why the others did not', () => {
    const { tried, decision } = explainGate(policy, 'run_action', {
      action: 'restart_service',
      params: { env: 'prod' },
    });
    expect(tried).toEqual([
      {
        index: 0,
        label: 'rule 1 of run_action (staging restarts)',
        matched: false,
        miss: 'params.env is "prod", expected "staging"',
      },
      { index: 1, label: 'rule 2 of run_action (prod restarts)', matched: true },
    ]);
    expect(decision.kind).toBe('ask');
  });
});

describe('conditions', () => {
  const c = (written: unknown) => conditionSchema.parse(written);
  const holds = (written: unknown, value: unknown) => conditionMiss(c(written), value) === null;

  it('equals (a plain value), one of, glob, regex, comparisons and presence', () => {
    expect(holds('prod', 'prod')).toBe(true);
    expect(holds('prod', 'Prod')).toBe(false);
    expect(holds(3, '3')).toBe(false);
    expect(holds(null, null)).toBe(true);
    expect(holds({ oneOf: ['a', 'b'] }, 'b')).toBe(true);
    expect(holds({ oneOf: ['a', 'b'] }, 'c')).toBe(false);
    expect(holds({ glob: 'pay*-?' }, 'payments-1')).toBe(true);
    expect(holds({ glob: 'pay*-?' }, 'payments-12')).toBe(false);
    expect(holds({ glob: '*' }, 5)).toBe(false);
    expect(holds({ regex: '^prod-[a-z]+$' }, 'prod-eu')).toBe(true);
    expect(holds({ regex: 'secret' }, 'a secret here')).toBe(true);
    expect(holds({ regex: 'secret' }, 7)).toBe(false);
    expect(holds({ gt: 3, lte: 10 }, 10)).toBe(true);
    expect(holds({ gt: 3, lte: 10 }, 3)).toBe(false);
    expect(holds({ lt: 3 }, '2')).toBe(true);
    expect(holds({ lt: 3 }, 'two')).toBe(false);
    expect(holds({ gte: 1 }, 1)).toBe(true);
    expect(holds({ present: true }, undefined)).toBe(false);
    expect(holds({ present: false }, undefined)).toBe(true);
    expect(holds({ present: false }, 0)).toBe(false);
  });

  it('reads dotted paths through objects and arrays, own properties only', () => {
    const args = { params: { env: 'prod' }, targets: [{ host: 'a' }] };
    expect(valueAt(args, 'params.env')).toBe('prod');
    expect(valueAt(args, 'targets.0.host')).toBe('a');
    expect(valueAt(args, 'targets.x')).toBeUndefined();
    expect(valueAt(args, 'params.constructor')).toBeUndefined();
    expect(valueAt({}, 'toString')).toBeUndefined();
  });

  it('globs stay fast on hostile input (no backtracking blow-up)', () => {
    const started = performance.now();
    expect(globMatch('*a*a*a*a*a*a*a*a*b', 'a'.repeat(5_000))).toBe(false);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('regexes run in linear time (RE2): a classic ReDoS pattern answers at once', () => {
    const started = performance.now();
    expect(holds({ regex: '^(a+)+$' }, `${'a'.repeat(50_000)}!`)).toBe(false);
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

describe('rules: refused at start-up with the key that is wrong', () => {
  it('regex syntax RE2 does not take (lookaround, backreferences, broken patterns)', () => {
    expect(
      problems(`
rules:
  post_message:
    - when: { text: { regex: "(?<=a)b" } }
      outcome: deny
      reason: x
    - when: { text: { regex: "(a)\\\\1" }, channel: { regex: "[" } }
      outcome: deny
      reason: x
`),
    ).toEqual([
      expect.stringMatching(
        /^rules\.post_message\[0\]\.when\.text\.regex: not a valid RE2 regular expression/,
      ),
      expect.stringMatching(
        /^rules\.post_message\[1\]\.when\.text\.regex: not a valid RE2 regular expression/,
      ),
      expect.stringMatching(
        /^rules\.post_message\[1\]\.when\.channel\.regex: not a valid RE2 regular expression/,
      ),
    ]);
  });

  it('outcomes and their options', () => {
    expect(
      problems(`
rules:
  run_action:
    - outcome: deny
    - outcome: allow
      quorum: 2
    - outcome: ask
      quorum: 3
      approvers: [U0A, U0B]
    - outcome: ask
      quorum: 2
      approvers: [S0LEADS]
      grant: { args: [channel], maxMinutes: 30 }
    - outcome: maybe
    - when: { env: { near: 1 } }
      outcome: ask
`),
    ).toEqual([
      'rules.run_action[0].reason: required for outcome deny (the model is told it)',
      'rules.run_action[1].quorum: only for outcome ask',
      'rules.run_action[2].quorum: 3 approvers needed but only 2 listed in approvers',
      "rules.run_action[3].grant: not with quorum 2: one person's grant would stand in for 2 approvals",
      'rules.run_action[4].outcome: expected allow, deny or ask',
      expect.stringMatching(/^rules\.run_action\[5\]\.when\.env\.near: unknown key/),
      'rules.run_action[5].when.env: expected at least one of equals, oneOf, glob, regex, lt, lte, gt, gte, present',
    ]);
  });

  it('tools: only enabled write/notify tools, and allow only for trusted ones', () => {
    expect(
      problems(`
rules:
  post_message:
    - outcome: allow
  http_get:
    - outcome: deny
      reason: x
  nosuch:
    - outcome: deny
      reason: x
  github__create_issue:
    - outcome: deny
      reason: x
`),
    ).toEqual([
      'rules.post_message[0].outcome: allow runs post_message calls without a person: list post_message in approvals.trusted to accept it',
      'rules.http_get: is a read tool: it runs without approval, so rules do not apply to it',
      expect.stringMatching(
        /^rules\.nosuch: unknown tool: rules apply to the enabled write and notify tools \(built-in: run_action, post_message, MCP tools/,
      ),
      'rules.github__create_issue: names MCP server github, which mcp.servers does not configure',
    ]);
  });

  it('escalation needs both its keys and must come before expiry', () => {
    expect(
      problems(`
rules:
  run_action:
    - outcome: ask
      escalateTo: [S0LEADS]
    - outcome: ask
      escalateTo: [S0LEADS]
      escalateAfterMinutes: 90
`),
    ).toEqual([
      'rules.run_action[0].escalateAfterMinutes: required: escalateTo and escalateAfterMinutes go together (here or under approvals)',
      'rules.run_action[1].escalateAfterMinutes: escalation after 90 min comes after the approval expires (60 min)',
    ]);
  });

  it('accepts rules for custom tools by name and for MCP tools as <server>__<tool>', () => {
    const policy = parsePolicy(
      `
approvals: { approvers: [U0MGR] }
custom: [{ path: ./lookup.ts, name: close_ticket }]
mcp:
  servers:
    github: { url: "https://mcp.example/", approvers: [U0MGR] }
rules:
  close_ticket:
    - when: { id: { present: false } }
      outcome: deny
      reason: name the ticket
  github__create_issue:
    - when: { repo: { glob: "acme/*" } }
      outcome: ask
      approvers: [U0LEAD]
`,
      { env: {} },
    );
    expect(decideGate(policy, 'close_ticket', {})).toMatchObject({ kind: 'deny' });
    expect(decideGate(policy, 'github__create_issue', { repo: 'acme/api' })).toMatchObject({
      kind: 'ask',
      approvers: { users: ['U0LEAD'], groups: [] },
    });
  });
});

describe('rules fail closed where they cannot be decided', () => {
  const policy = () => parsePolicy(SCALE_POLICY, { env: {} });
  const scale = (params: Record<string, unknown>) => ({ action: 'scale', params });

  it('a deny on replicas > 10 denies a schema-typed string "50", as a person reads the rule', () => {
    expect(decideGate(policy(), 'run_action', scale({ replicas: '50', env: 'staging' }))).toMatchObject({
      kind: 'deny',
      rule: { index: 0 },
    });
    expect(decideGate(policy(), 'run_action', scale({ replicas: '3', env: 'staging' }))).toMatchObject({
      kind: 'allow',
      rule: { index: 2 },
    });
  });

  it('a value no comparison can read is asked, never allowed by a later rule', () => {
    const decision = decideGate(policy(), 'run_action', scale({ replicas: 'fifty', env: 'staging' }));
    expect(decision).toMatchObject({ kind: 'ask', rule: null, approvers: { users: ['U0MGR'] } });
    // A later ask rule that matches still applies, with its own people.
    expect(decideGate(policy(), 'run_action', scale({ replicas: '0x40', env: 'prod' }))).toMatchObject({
      kind: 'ask',
      rule: { index: 1 },
      quorum: 2,
    });
    const { tried } = explainGate(policy(), 'run_action', scale({ replicas: 'fifty', env: 'staging' }));
    expect(tried.map((t) => [t.matched, t.miss])).toEqual([
      [
        false,
        expect.stringMatching(/^cannot be decided \(params\.replicas is "fifty", which is not a number/),
      ],
      [false, 'params.env is "staging", expected "prod"'],
      [false, 'matches, but an undecidable deny rule before it bars allow'],
    ]);
  });
});

describe('rules on lists', () => {
  const policy = () =>
    parsePolicy(
      `
approvals: { approvers: [U0MGR], trusted: [deploy] }
custom: [{ path: ./deploy.ts, name: deploy }]
rules:
  deploy:
    - when: { targets.host: { glob: "prod-*" } }
      outcome: ask
      approvers: [S0SRELEADS]
    - when: { targets.host: { glob: "staging-*" }, tags: canary }
      outcome: allow
`,
      { env: {} },
    );
  const call = (hosts: string[], tags: string[] = ['canary']) => ({
    targets: hosts.map((host) => ({ host })),
    tags,
  });

  it('a deny or ask rule holds when any element does; an allow rule only when every element does', () => {
    expect(decideGate(policy(), 'deploy', call(['staging-1', 'prod-1']))).toMatchObject({
      kind: 'ask',
      rule: { index: 0 },
    });
    expect(decideGate(policy(), 'deploy', call(['staging-1', 'staging-2']))).toMatchObject({ kind: 'allow' });
    // A host that is not staging among staging ones: the allow does not hold.
    expect(decideGate(policy(), 'deploy', call(['staging-1', 'other']))).toMatchObject({
      kind: 'ask',
      rule: null,
    });
    // No element at all: an allow never holds for an empty list.
    expect(decideGate(policy(), 'deploy', call([]))).toMatchObject({ kind: 'ask', rule: null });
    // A list at the end of a path: every element too.
    expect(decideGate(policy(), 'deploy', call(['staging-1'], ['canary', 'risky']))).toMatchObject({
      kind: 'ask',
      rule: null,
    });
  });

  it('an index reads that element only', () => {
    const indexed = parsePolicy(
      `
approvals: { approvers: [U0MGR] }
custom: [{ path: ./deploy.ts, name: deploy }]
rules:
  deploy:
    - when: { targets.1.host: { glob: "prod-*" } }
      outcome: deny
      reason: no prod
`,
      { env: {} },
    );
    expect(decideGate(indexed, 'deploy', call(['prod-1', 'staging-1']))).toMatchObject({ kind: 'ask' });
    expect(decideGate(indexed, 'deploy', call(['staging-1', 'prod-1']))).toMatchObject({ kind: 'deny' });
  });
});
