/**
 * `loopgate policy replay` through the real CLI on real Redis: decisions recorded by the store as the
 * worker and bot record them (rule decisions, clicks, an expired record), replayed under a proposed file.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatedCall } from '../../src/loop/gated-calls.js';
import { approvalIdFor } from '../../src/store/index.js';
import { type StoreFixture, storeFixture } from '../store/redis-fixture.js';
import { realisticState, slack } from '../store/run-state-fixture.js';
import { type CliResult, emptyWorkDir, runCli } from './cli-harness.js';

const RUN = 'run-replay';
const HOUR = 3_600_000;
const SECRETS = { DEPLOY_API_AUTH: 'Bearer d', PD_ROUTING_KEY: 'r0ut1ng' };

const call = (id: string, tool: string, args: unknown, effect: GatedCall['effect'] = 'write'): GatedCall => ({
  toolCallId: id,
  tool,
  effect,
  args,
  argsHash: `${id}-hash`.padEnd(64, '0'),
  idempotent: false,
});
const restart = (env: string) => ({ action: 'restart_service', params: { service: 'payments', env } });

/** The proposed policy: staging restarts allowed, prod restarts by one SRE lead, post_message disabled. */
const PROPOSED = `
approvals:
  approvers: [U012MANAGER]
  trusted: [run_action]
tools:
  page_oncall:
    url: "https://events.pagerduty.com/v2/enqueue"
    routingKeyEnv: PD_ROUTING_KEY
  run_action:
    approvers: [S0SRELEADS]
    actions:
      restart_service:
        description: Restart one service
        params:
          service: { enum: [payments, search] }
          env: { enum: [staging, prod] }
        http:
          method: POST
          url: "https://deploy.internal.example/api/restart/{service}?env={env}"
          headersEnv: { Authorization: DEPLOY_API_AUTH }
rules:
  run_action:
    - name: staging restarts
      when: { action: restart_service, params.env: staging }
      outcome: allow
    - name: prod restarts
      when: { action: restart_service, params.env: prod }
      outcome: ask
      approvers: [S0SRELEADS]
`;

let fx: StoreFixture;
let env: Record<string, string>;
const work = emptyWorkDir();
const cli = (...args: string[]): Promise<CliResult> => runCli(args, env, work.dir);
let since = 0;

beforeAll(async () => {
  fx = storeFixture();
  env = { REDIS_URL: 'redis://127.0.0.1:6379', LOOPGATE_PREFIX: `{${fx.prefix}}`, ...SECRETS };
  writeFileSync(join(work.dir, 'proposed.yaml'), PROPOSED);
  await fx.store.runs.createRun(realisticState(RUN), slack);
  const lease = await fx.store.leases.acquire(RUN, 'worker-a', 30_000);
  if (!lease.acquired) throw new Error('no lease');
  since = Date.now() - 1_000;
  const now = Date.now();
  const sre = { users: [], groups: ['S0SRELEADS'] };
  await fx.store.approvals.createApprovals({
    runId: RUN,
    fence: lease.fence,
    requester: 'U0ALICE',
    now,
    approvals: [
      // Asked of the SRE leads by default; a person approved. Proposed: allowed by a rule.
      { call: call('c_staging', 'run_action', restart('staging')), approvers: sre, expiresAt: now + HOUR },
      // Asked of two SRE leads (quorum 2) by the prod rule. Proposed: quorum 1.
      {
        call: call('c_prod', 'run_action', restart('prod')),
        approvers: sre,
        expiresAt: now + HOUR,
        policy: { rule: 'rule 2 of run_action (prod restarts)', quorum: 2 },
      },
      // Posted after approval. Proposed: post_message is not enabled.
      {
        call: call('c_post', 'post_message', { channel: 'C0OPS', text: 'hi' }, 'notify'),
        approvers: { users: ['U012MANAGER'], groups: [] },
        expiresAt: now + HOUR,
      },
      // Rejected; the proposed policy asks the same person: unchanged.
      {
        call: call('c_page', 'page_oncall', { summary: 'db down' }, 'notify'),
        approvers: { users: ['U012MANAGER'], groups: [] },
        expiresAt: now + HOUR,
      },
      // Its record will be gone (records expire): counted, not replayed.
      {
        call: call('c_gone', 'run_action', restart('staging')),
        approvers: sre,
        expiresAt: now + HOUR,
      },
    ],
  });
  const decide = (id: string, decision: 'approved' | 'rejected', by: string) =>
    fx.store.approvals.decide({
      approvalId: approvalIdFor(RUN, id),
      decision,
      decidedBy: by,
      now: Date.now(),
    });
  await decide('c_staging', 'approved', 'U0LEAD1');
  await decide('c_prod', 'approved', 'U0LEAD1');
  await decide('c_prod', 'approved', 'U0LEAD2');
  await decide('c_post', 'approved', 'U012MANAGER');
  await decide('c_page', 'rejected', 'U012MANAGER');
  await decide('c_gone', 'approved', 'U0LEAD1');
  await fx.redis.del(fx.store.context.keys.approval(approvalIdFor(RUN, 'c_gone')));
});
afterAll(async () => {
  await fx.cleanup();
  work.remove();
});

describe('loopgate policy replay', () => {
  it('prints each call the proposed policy decides differently, what it was and what it would be', async () => {
    const result = await cli('policy', 'replay', 'proposed.yaml', '--since', new Date(since).toISOString());
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const out = result.stdout;
    expect(out).toContain('Replayed 4 call(s) decided from');
    expect(out).toContain(
      [
        "    was: asked of S0SRELEADS by the tool's default",
        '    now: allowed by rule 1 of run_action (staging restarts)  [newly_allowed]',
      ].join('\n'),
    );
    expect(out).toContain(
      [
        '    was: asked of S0SRELEADS (quorum 2) by rule 2 of run_action (prod restarts)',
        '    now: asked of S0SRELEADS by rule 2 of run_action (prod restarts)  [quorum]',
      ].join('\n'),
    );
    expect(out).toContain('now: not offered to the model (the tool is not enabled)  [no_longer_offered]');
    expect(out).not.toContain('page_oncall');
    expect(out).toContain(
      '3 call(s) would be decided differently: 1 no longer offered, 1 newly allowed, 1 quorum.',
    );
    expect(out).toContain('1 decision(s) not replayed: their approval records have expired.');
  });

  it('gives the report as JSON and exits 3 when a change crosses --fail-on', async () => {
    const result = await cli(
      'policy',
      'replay',
      'proposed.yaml',
      '--since',
      '1h',
      '--json',
      '--fail-on',
      'newly_allowed',
    );
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('--fail-on refuses (newly_allowed)');
    const report = JSON.parse(result.stdout) as {
      replayed: number;
      counts: Record<string, number>;
      changed: Array<{ approvalId: string; changes: string[] }>;
      unreplayable: Array<{ approvalId: string }>;
    };
    expect(report.replayed).toBe(4);
    expect(report.changed.map((c) => [c.approvalId, c.changes])).toEqual([
      [approvalIdFor(RUN, 'c_staging'), ['newly_allowed']],
      [approvalIdFor(RUN, 'c_prod'), ['quorum']],
      [approvalIdFor(RUN, 'c_post'), ['no_longer_offered']],
    ]);
    expect(report.unreplayable.map((u) => u.approvalId)).toEqual([approvalIdFor(RUN, 'c_gone')]);
    // Only the kinds named count.
    expect(
      (await cli('policy', 'replay', 'proposed.yaml', '--since', '1h', '--fail-on', 'newly_denied')).code,
    ).toBe(0);
  });

  it('refuses an unknown change name and a missing --since, as usage errors', async () => {
    const unknown = await cli(
      'policy',
      'replay',
      'proposed.yaml',
      '--since',
      '1h',
      '--fail-on',
      'everything',
    );
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--fail-on: unknown change "everything"');
    const noSince = await cli('policy', 'replay', 'proposed.yaml');
    expect(noSince.code).toBe(2);
    expect(noSince.stderr).toContain('--since is required');
  });
});
