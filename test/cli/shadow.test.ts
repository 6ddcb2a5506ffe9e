/**
 * `loopgate shadow report`, `policy test` and `check-config` on shadow mode, through the real CLI: the
 * report reads a history recorded by the store as the worker and bot record it (shadow calls created
 * closed, Would approve / Would reject clicks at scripted times) from real Redis.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatedCall } from '../../src/loop/gated-calls.js';
import { approvalIdFor } from '../../src/store/index.js';
import { type StoreFixture, storeFixture } from '../store/redis-fixture.js';
import { realisticState, slack } from '../store/run-state-fixture.js';
import { type CliResult, emptyWorkDir, runCli } from './cli-harness.js';

const RUN = 'run-shadow-report';
const MIN = 60_000;
const REASON = 'shadow mode (approvals.mode is shadow): not executed';
let fx: StoreFixture;
let env: Record<string, string>;
const work = emptyWorkDir();
const cli = (...args: string[]): Promise<CliResult> => runCli(args, env, work.dir);

const POLICY = `
approvals: { approvers: [U0LEAD], mode: shadow }
channels: { shadow: [C0TRIAL] }
tools:
  post_message: { channels: [C0OPS], mode: enforce }
`;

const call = (id: string, args: unknown): GatedCall => ({
  toolCallId: id,
  tool: 'restart',
  effect: 'write',
  args,
  argsHash: `${id}`.padEnd(64, '0'),
  idempotent: false,
});

beforeAll(async () => {
  fx = storeFixture();
  env = { REDIS_URL: 'redis://127.0.0.1:6379', LOOPGATE_PREFIX: `{${fx.prefix}}` };
  writeFileSync(join(work.dir, 'loopgate.yaml'), POLICY);
  await fx.store.runs.createRun(realisticState(RUN), slack);
  const lease = await fx.store.leases.acquire(RUN, 'w', 30_000);
  if (!lease.acquired) throw new Error('no lease');
  const now = Date.now();
  const ids = ['c1', 'c2', 'c3', 'c4'];
  await fx.store.approvals.createApprovals({
    runId: RUN,
    fence: lease.fence,
    requester: 'U0ALICE',
    now,
    approvals: ids.map((id) => ({
      call: call(id, { service: 'search', env: 'staging', note: id }),
      approvers: { users: ['U0LEAD'], groups: [] },
      expiresAt: now + 60 * MIN,
      decided: { status: 'rejected' as const, via: 'shadow' as const, reason: REASON },
    })),
  });
  const delays = { c1: 1 * MIN, c2: 4 * MIN, c3: 2 * MIN };
  for (const [id, delay] of Object.entries(delays)) {
    await fx.store.approvals.shadowDecide({
      approvalId: approvalIdFor(RUN, id),
      decision: 'would_approve',
      by: 'U0LEAD',
      now: now + delay,
    });
  }
});
afterAll(async () => {
  await fx.cleanup();
  work.remove();
});

describe('loopgate shadow report', () => {
  it('--json: calls, would approve, undecided, acceptance, time to decide, and a suggested allow rule', async () => {
    const res = await cli('shadow', 'report', '--since', '14d', '--json');
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const report = JSON.parse(res.stdout);
    expect(report.groups).toEqual([
      {
        tool: 'restart',
        rule: '',
        calls: 4,
        wouldApprove: 3,
        wouldReject: 0,
        undecided: 1,
        acceptanceRate: 1,
        timeToDecideMs: { p50: 2 * MIN, p95: 4 * MIN },
        suggestion: { yaml: expect.stringContaining('outcome: allow'), evidence: expect.any(String) },
      },
    ]);
    expect(report.groups[0].suggestion.yaml).toContain('service: search');
    expect(report.groups[0].suggestion.yaml).toContain('env: staging');
    expect(report.groups[0].suggestion.yaml).not.toContain('note:');
  });

  it('as text: a table and the YAML snippet with its evidence', async () => {
    const res = await cli('shadow', 'report', '--since', '14d');
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('Shadow calls from');
    expect(res.stdout).toMatch(/restart\s+\(default ask\)\s+4\s+3\s+0\s+1\s+100%\s+2m 00s\s+4m 00s/);
    expect(res.stdout).toContain('Suggested allow rules');
    expect(res.stdout).toContain('3 of 3 decided calls would be approved (acceptance 100%), 1 undecided');
  });

  it('a range before the calls is empty; --min-calls above the evidence suggests nothing', async () => {
    const early = await cli('shadow', 'report', '--since', '2020-01-01', '--until', '2020-01-02', '--json');
    expect(JSON.parse(early.stdout).groups).toEqual([]);
    const strict = await cli('shadow', 'report', '--since', '14d', '--min-calls', '4', '--json');
    expect(JSON.parse(strict.stdout).groups[0].suggestion).toBeNull();
    expect((await cli('shadow', 'report')).code).toBe(2);
  });
});

describe('policy test and check-config on shadow mode', () => {
  it('policy test says a call would be shadowed, and why; a tool with mode: enforce is not', async () => {
    const shadowed = await cli('policy', 'test', 'restart', '{"service":"search"}');
    expect(shadowed.code).toBe(0);
    expect(shadowed.stdout).toContain('shadow mode (approvals.mode is shadow): the call would NOT run');
    const json = JSON.parse((await cli('policy', 'test', 'post_message', '{}', '--json')).stdout);
    expect(json.shadow).toBeNull();
    const channel = JSON.parse(
      (await cli('policy', 'test', 'post_message', '{}', '--channel', 'C0TRIAL', '--json')).stdout,
    );
    expect(channel.shadow).toBe('channel C0TRIAL is in channels.shadow');
  });

  it('check-config shows the shadow modes', async () => {
    const res = await cli('check-config', '--json');
    const summary = JSON.parse(res.stdout);
    expect(summary.approvals.mode).toBe('shadow');
    expect(summary.shadowChannels).toEqual(['C0TRIAL']);
    expect(summary.tools.find((t: { name: string }) => t.name === 'post_message')?.mode).toBe('enforce');
    const text = (await cli('check-config')).stdout;
    expect(text).toContain('shadow:    approvals.mode is shadow');
    expect(text).toContain('every call asked in C0TRIAL is shadowed');
  });
});
