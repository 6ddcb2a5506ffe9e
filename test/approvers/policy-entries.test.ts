import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/errors.js';
import { parsePolicy } from '../../src/config/policy.js';
import { approversFor } from '../../src/config/policy-limits.js';
import { decisionText } from '../../src/policy/describe.js';
import { decideGate } from '../../src/policy/gate.js';

const ENV = { PAGERDUTY_API_TOKEN: 'pd', OPSGENIE_API_KEY: 'og' };

function problems(yaml: string, env: Record<string, string> = ENV): string[] {
  try {
    parsePolicy(yaml, { env });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => `${p.key}: ${p.problem}`);
    throw err;
  }
  return [];
}

describe('on-call approver entries in the policy', () => {
  it('parses schedules, escalation levels and Opsgenie schedules, each with its fallback', () => {
    const policy = parsePolicy(
      `approvals:
  approvers:
    - U0LEAD
    - oncall: { pagerduty: { schedule: P1ABC }, fallback: [S0SRE] }
tools:
  post_message:
    channels: [C0OPS]
    approvers:
      - oncall: { opsgenie: { schedule: payments_schedule }, fallback: [U0LEAD] }
rules:
  post_message:
    - outcome: ask
      approvers: [{ oncall: { pagerduty: { escalationPolicy: P2DEF, level: 1 }, fallback: [U0LEAD] } }]
      escalateTo: [{ oncall: { pagerduty: { escalationPolicy: P2DEF, level: 2 }, fallback: [S0SRE] } }]
      escalateAfterMinutes: 10
`,
      { env: ENV },
    );
    expect(approversFor(policy, 'http_request')).toEqual({
      users: ['U0LEAD'],
      groups: [],
      oncall: [
        {
          source: { provider: 'pagerduty', schedule: 'P1ABC', tokenEnv: 'PAGERDUTY_API_TOKEN' },
          fallback: { users: [], groups: ['S0SRE'] },
        },
      ],
    });
    const ask = decideGate(policy, 'post_message', { channel: 'C0OPS', text: 'x' });
    expect(ask.kind === 'ask' && ask.approvers.oncall?.[0]?.source).toEqual({
      provider: 'pagerduty',
      escalationPolicy: 'P2DEF',
      level: 1,
      tokenEnv: 'PAGERDUTY_API_TOKEN',
    });
    expect(ask.kind === 'ask' && ask.escalation?.to.oncall?.[0]?.source.level).toBe(2);
    expect(decisionText(ask)).toContain(
      'asks the on-call of PagerDuty escalation policy P2DEF level 1 (fallback: U0LEAD)',
    );
  });

  it('refuses an on-call source without fallback, with two providers, or with an unknown key', () => {
    expect(problems('approvals: { approvers: [{ oncall: { pagerduty: { schedule: P1ABC } } }] }')).toEqual([
      'approvals.approvers[0].oncall.fallback: required (expected a list of Slack user or user group ids)',
    ]);
    expect(
      problems('approvals: { approvers: [{ oncall: { pagerduty: { schedule: P1ABC }, fallback: [] } }] }'),
    ).toEqual([
      'approvals.approvers[0].oncall.fallback: required: who decides when the on-call source cannot answer (Slack user or group ids)',
    ]);
    expect(
      problems(
        'approvals: { approvers: [{ oncall: { pagerduty: { schedule: P1ABC }, opsgenie: { schedule: x }, fallback: [U0A] } }] }',
      ),
    ).toEqual(['approvals.approvers[0].oncall: expected exactly one of pagerduty or opsgenie']);
  });

  it('names the token variable an on-call source needs when it is not set', () => {
    expect(
      problems(
        'approvals: { approvers: [{ oncall: { opsgenie: { schedule: ops }, fallback: [U0A] } }] }',
        {},
      ),
    ).toEqual(['approvals.approvers[0].source.tokenEnv: environment variable OPSGENIE_API_KEY is not set']);
    expect(
      problems(
        'approvals: { approvers: [{ oncall: { pagerduty: { schedule: P1ABC, tokenEnv: PD_PAYMENTS }, fallback: [U0A] } }] }',
        {},
      ),
    ).toEqual([
      'approvals.approvers[0].oncall.pagerduty.tokenEnv: environment variable PD_PAYMENTS is not set',
    ]);
  });

  it('bounds the cache period', () => {
    expect(problems('approvals: { oncallCacheSeconds: 3600 }')).toEqual([
      'approvals.oncallCacheSeconds: expected at most 900 seconds (15 minutes): on-call changes must show soon',
    ]);
  });
});
