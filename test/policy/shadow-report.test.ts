/**
 * The figures of `loopgate shadow report` from a scripted history: per tool and rule the counts, the
 * acceptance rate, time to decide (nearest-rank p50/p95) and the suggested allow rule, which parses as
 * policy and allows exactly the calls like the accepted ones.
 */

import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parsePolicy } from '../../src/config/policy.js';
import { decideGate } from '../../src/policy/gate.js';
import { percentile, type ShadowCall, shadowReport } from '../../src/policy/shadow-report.js';

const T = Date.UTC(2026, 11, 1, 9);
const MIN = 60_000;
const restart = (env: string) => ({ action: 'restart_service', env, service: 'payments' });
let n = 0;
const shadowCall = (
  tool: string,
  rule: string,
  args: unknown,
  decision?: ['would_approve' | 'would_reject', number],
): ShadowCall => ({
  approvalId: `a${++n}`,
  tool,
  rule,
  requestedAt: T + n * MIN,
  args,
  ...(decision ? { decision: { kind: decision[0], by: 'U0LEAD', at: T + n * MIN + decision[1] } } : {}),
});

const HISTORY: ShadowCall[] = [
  shadowCall('run_action', '', restart('staging'), ['would_approve', 1 * MIN]),
  shadowCall('run_action', '', restart('staging'), ['would_approve', 2 * MIN]),
  shadowCall('run_action', '', restart('staging'), ['would_approve', 3 * MIN]),
  shadowCall('run_action', '', restart('staging'), ['would_approve', 10 * MIN]),
  shadowCall('run_action', '', restart('staging')),
  shadowCall('run_action', 'rule 2 of run_action (prod)', restart('prod'), ['would_approve', 5 * MIN]),
  shadowCall('run_action', 'rule 2 of run_action (prod)', restart('prod'), ['would_reject', 7 * MIN]),
  shadowCall('run_action', 'rule 2 of run_action (prod)', restart('prod')),
  shadowCall('post_message', '', { channel: 'C0OPS', text: 'a' }, ['would_approve', 30_000]),
  shadowCall('post_message', '', { channel: 'C0OPS', text: 'b' }, ['would_approve', 90_000]),
];
const RANGE = { from: T, to: T + 14 * 86_400_000 };

describe('shadow report', () => {
  it('nearest-rank percentiles', () => {
    expect(percentile([1, 2, 3, 10], 50)).toBe(2);
    expect(percentile([1, 2, 3, 10], 95)).toBe(10);
    expect(percentile([7], 95)).toBe(7);
    expect(() => percentile([], 50)).toThrow();
  });

  it('counts, acceptance and time to decide per tool and rule', () => {
    const report = shadowReport(HISTORY, RANGE);
    expect(report.groups.map(({ suggestion, ...g }) => g)).toEqual([
      {
        tool: 'post_message',
        rule: '',
        calls: 2,
        wouldApprove: 2,
        wouldReject: 0,
        undecided: 0,
        acceptanceRate: 1,
        timeToDecideMs: { p50: 30_000, p95: 90_000 },
      },
      {
        tool: 'run_action',
        rule: '',
        calls: 5,
        wouldApprove: 4,
        wouldReject: 0,
        undecided: 1,
        acceptanceRate: 1,
        timeToDecideMs: { p50: 2 * MIN, p95: 10 * MIN },
      },
      {
        tool: 'run_action',
        rule: 'rule 2 of run_action (prod)',
        calls: 3,
        wouldApprove: 1,
        wouldReject: 1,
        undecided: 1,
        acceptanceRate: 0.5,
        timeToDecideMs: { p50: 5 * MIN, p95: 7 * MIN },
      },
    ]);
  });

  it('suggests an allow rule only where every decided call was accepted, at least minCalls of them', () => {
    const [post, staging, prod] = shadowReport(HISTORY, RANGE).groups;
    expect(post?.suggestion).toBeNull(); // 2 < 3
    expect(prod?.suggestion).toBeNull(); // one would reject
    expect(staging?.suggestion?.evidence).toContain(
      '4 of 4 decided calls would be approved (acceptance 100%), 1 undecided',
    );
    expect(parse(staging?.suggestion?.yaml ?? '')).toEqual({
      approvals: { trusted: ['run_action'] },
      rules: {
        run_action: [
          {
            name: 'shadow: 4 of 4 would approve, 2026-12-01..2026-12-15',
            when: { action: 'restart_service', env: 'staging', service: 'payments' },
            outcome: 'allow',
          },
        ],
      },
    });
    expect(shadowReport(HISTORY, RANGE, 2).groups[0]?.suggestion).not.toBeNull();
  });

  it('the suggested rule is valid policy and allows calls like the accepted ones, and no others', () => {
    const [, staging] = shadowReport(HISTORY, RANGE).groups;
    const yaml = `custom:\n  - { path: ./r.ts, name: run_action }\n${staging?.suggestion?.yaml}`;
    const policy = parsePolicy(yaml, { env: {} });
    expect(decideGate(policy, 'run_action', restart('staging')).kind).toBe('allow');
    expect(decideGate(policy, 'run_action', restart('prod')).kind).toBe('ask');
  });

  it('no suggestion without the arguments (records expired): nothing narrower than every call is known', () => {
    const blind = HISTORY.slice(0, 4).map(({ args, ...c }) => c);
    expect(shadowReport(blind, RANGE).groups[0]?.suggestion).toBeNull();
  });
});
