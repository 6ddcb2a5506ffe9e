import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatedCall } from '../../src/loop/gated-calls.js';
import { type ApprovalRecord, approvalIdFor, auditEntrySchema } from '../../src/store/index.js';
import { type StoreFixture, storeFixture } from '../store/redis-fixture.js';
import { realisticState, slack } from '../store/run-state-fixture.js';
import { type CliResult, emptyWorkDir, runCli } from './cli-harness.js';

const RUN = 'run-gated';
/** A run whose approval was asked 45 minutes ago and whose card is posted. */
const OLD_RUN = 'run-gated-old';
const OLD_CARD = { channel: 'C0OPS', ts: '1767000000.000200' };
const HOUR = 3_600_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const gated = (id: string, tool: string, effect: GatedCall['effect'] = 'write'): GatedCall => ({
  toolCallId: id,
  tool,
  effect,
  args: { id },
  argsHash: `${id}-hash`.padEnd(64, '0'),
  idempotent: false,
});

let fx: StoreFixture;
let env: Record<string, string>;
const work = emptyWorkDir();
const cli = (...args: string[]): Promise<CliResult> => runCli(args, env, work.dir);

/** Times the audit entries were appended around: before the first, between the two, after the second. */
const marks = { before: 0, between: 0, after: 0 };

beforeAll(async () => {
  fx = storeFixture();
  env = { REDIS_URL: 'redis://127.0.0.1:6379', LOOPGATE_PREFIX: `{${fx.prefix}}` };
  await fx.store.runs.createRun(realisticState(RUN), slack);
  const lease = await fx.store.leases.acquire(RUN, 'worker-a', 30_000);
  if (!lease.acquired) throw new Error('no lease');
  const now = Date.now();
  const approvers = { users: ['U0MANAGER'], groups: ['S0SRE'] };
  await fx.store.approvals.createApprovals({
    runId: RUN,
    fence: lease.fence,
    requester: 'U0ALICE',
    now,
    approvals: [
      { call: gated('call_restart', 'run_action'), approvers, expiresAt: now + HOUR },
      { call: gated('call_page', 'page_oncall', 'notify'), approvers, expiresAt: now + 2 * HOUR },
      { call: gated('call_post', 'post_message', 'notify'), approvers, expiresAt: now + 3 * HOUR },
      // Past its expiry but never expired by a worker: only --all shows it.
      { call: gated('call_stale', 'http_request'), approvers, expiresAt: now - 60_000 },
    ],
  });
  await fx.store.runs.createRun(realisticState(OLD_RUN), slack);
  const oldLease = await fx.store.leases.acquire(OLD_RUN, 'worker-a', 30_000);
  if (!oldLease.acquired) throw new Error('no lease');
  await fx.store.approvals.createApprovals({
    runId: OLD_RUN,
    fence: oldLease.fence,
    requester: 'U0BOB',
    now: now - 45 * 60_000,
    approvals: [{ call: gated('call_old', 'http_request'), approvers, expiresAt: now + HOUR }],
  });
  await fx.store.approvals.setCard(approvalIdFor(OLD_RUN, 'call_old'), OLD_CARD);
  marks.before = Date.now();
  await sleep(30);
  await fx.store.approvals.decide({
    approvalId: approvalIdFor(RUN, 'call_post'),
    decision: 'approved',
    decidedBy: 'U0MANAGER',
    now: Date.now(),
  });
  await sleep(30);
  marks.between = Date.now();
  await sleep(30);
  await fx.store.approvals.decide({
    approvalId: approvalIdFor(RUN, 'call_page'),
    decision: 'rejected',
    decidedBy: 'U0MANAGER',
    reason: 'not at night',
    now: Date.now(),
    permalink: 'https://example.slack.com/archives/C0OPS/p1767000000000100',
  });
  await sleep(30);
  marks.after = Date.now();
});
afterAll(async () => {
  await fx.cleanup();
  work.remove();
});

const iso = (ms: number) => new Date(ms).toISOString();

describe('loopgate approvals', () => {
  it('lists the pending approvals oldest first: how long each waited, tool, run, requester, approvers, expiry, link', async () => {
    const result = await cli('approvals');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^WAITING\s+APPROVAL\s+TOOL\s+RUN\s+REQUESTER\s+APPROVERS\s+EXPIRES\s+LINK$/);
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(
      new RegExp(
        `^45m 0\\ds\\s+${approvalIdFor(OLD_RUN, 'call_old')}\\s+http_request \\[write\\]\\s+${OLD_RUN}\\s+U0BOB\\s+U0MANAGER,S0SRE\\s+\\S+ \\S+Z \\(in .*\\)\\s+https://slack\\.com/archives/C0OPS/p1767000000000200$`,
      ),
    );
    expect(lines[2]).toMatch(
      new RegExp(
        `^\\d+(\\.\\d)? (ms|s)\\s+${approvalIdFor(RUN, 'call_restart')}\\s+run_action \\[write\\]\\s+${RUN}\\s+U0ALICE\\s+U0MANAGER,S0SRE\\s+\\S+ \\S+Z \\(in (5\\dm \\d\\ds|1h 00m)\\)\\s+-$`,
      ),
    );
    // Not a terminal: no colour codes.
    expect(result.stdout).not.toContain('\u001b[');
  });

  it('--json gives each record with its age and link', async () => {
    const result = await cli('approvals', '--json');
    const records = JSON.parse(result.stdout) as Array<
      ApprovalRecord & { ageMs: number; link: string | null }
    >;
    expect(records.map((r) => r.toolCallId)).toEqual(['call_old', 'call_restart']);
    expect(records[0]?.ageMs).toBeGreaterThanOrEqual(45 * 60_000);
    expect(records[0]?.link).toBe('https://slack.com/archives/C0OPS/p1767000000000200');
    expect(records[1]?.link).toBeNull();
  });

  it('with --all also lists the approvals past their expiry that nobody expired, marked overdue', async () => {
    const result = await cli('approvals', '--all', '--json');
    expect(result.code).toBe(0);
    const records = JSON.parse(result.stdout) as ApprovalRecord[];
    expect(records.map((r) => r.toolCallId)).toEqual(['call_old', 'call_stale', 'call_restart']);
    expect(records.every((r) => r.status === 'pending')).toBe(true);
    const text = await cli('approvals', '--all');
    expect(text.stdout).toMatch(/http_request \[write\].*\(OVERDUE, [1-9]m \d\ds ago\)/);
  });
});

describe('loopgate audit', () => {
  const parse = (stdout: string) =>
    stdout
      .trimEnd()
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { id: string } & Record<string, unknown>);

  it('exports every decision of a range as JSON Lines, oldest first, each a valid audit entry', async () => {
    const result = await cli('audit', '--since', iso(marks.before), '--until', iso(marks.after));
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const lines = parse(result.stdout);
    expect(lines.map((l) => [l.tool, l.decision])).toEqual([
      ['post_message', 'approved'],
      ['page_oncall', 'rejected'],
    ]);
    for (const { id, ...entry } of lines) {
      expect(id).toMatch(/^\d+-\d+$/);
      expect(auditEntrySchema.parse(entry)).toEqual(entry);
      const at = Number(id.split('-')[0]);
      expect(at).toBeGreaterThanOrEqual(marks.before);
      expect(at).toBeLessThanOrEqual(marks.after);
    }
    expect(lines[1]).toMatchObject({
      runId: RUN,
      requester: 'U0ALICE',
      decider: 'U0MANAGER',
      reason: 'not at night',
      permalink: 'https://example.slack.com/archives/C0OPS/p1767000000000100',
    });
  });

  it('keeps only the entries logged inside the range', async () => {
    const early = parse(
      (await cli('audit', '--since', iso(marks.before), '--until', iso(marks.between))).stdout,
    );
    expect(early.map((l) => l.tool)).toEqual(['post_message']);
    const late = parse((await cli('audit', '--since', iso(marks.between))).stdout);
    expect(late.map((l) => l.tool)).toEqual(['page_oncall']);
    const none = await cli('audit', '--since', iso(marks.after));
    expect(none).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  it('takes a span back from now, and writes to a file with --out', async () => {
    const out = join(work.dir, 'audit.jsonl');
    const result = await cli('audit', '--since', '1h', '--out', out);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^wrote 2 audit entries \(.+\) to .*audit\.jsonl\n$/);
    expect(parse(readFileSync(out, 'utf8')).map((l) => l.decision)).toEqual(['approved', 'rejected']);
  });

  it('refuses a missing or unreadable range with exit 2', async () => {
    const cases = [
      [],
      ['--since', 'yesterday'],
      ['--since', '1h', '--until', '2h'],
      ['--since', '2026-13-45'],
    ];
    const results = await Promise.all(cases.map((args) => cli('audit', ...args)));
    results.forEach((result, i) => {
      expect(result.code, cases[i]?.join(' ')).toBe(2);
      expect(result.stderr).toContain('Usage: loopgate audit');
    });
  });
});
