/**
 * A grant counts as its grantor's approval, with every check an Approve click would get (issue 21, item 4;
 * design invariant 9): it never approves its grantor's own requests when self-approval is off, nor once
 * its grantor is no longer an approver of the call; otherwise it lets a matching call through.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { AskDecision } from '../../src/policy/gate.js';
import { call, scriptedModel } from '../support/engine.js';
import { createHarness } from '../support/worker-harness.js';

let h: Awaited<ReturnType<typeof createHarness>> | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const RULE = 'rule 1 of restart (restarts)';
const ask = (over: Partial<AskDecision> = {}): AskDecision => ({
  kind: 'ask',
  rule: { index: 0, name: 'restarts', label: RULE },
  approvers: { users: ['UMGR', 'UREQ'], groups: [] },
  quorum: 1,
  selfApproval: false,
  expiresAfterMs: 600_000,
  remindAtPercent: [],
  escalation: null,
  grant: { args: ['service'], maxMinutes: 60 },
  ...over,
});

/** A restart asked by `requester` in a thread where `grantedBy` granted restarts of payments. */
async function askUnderGrant(grantedBy: string, requester: string, decision: AskDecision = ask()) {
  h = await createHarness({
    model: scriptedModel([{ calls: [call('restart', { service: 'payments' })] }, { text: 'done' }]),
    gate: () => decision,
  });
  h.startWorker();
  const job = h.startJob('restart payments', { userId: requester });
  const now = Date.now();
  await h.store.grants.create({
    tool: 'restart',
    rule: RULE,
    values: { service: 'payments' },
    scope: 'thread',
    runId: 'r-earlier',
    teamId: job.teamId,
    channelId: job.channelId,
    threadTs: job.threadTs,
    grantedBy,
    grantedAt: now,
    expiresAt: now + 3_600_000,
    approvalId: 'r-earlier.0123456789abcdef',
    approvers: { users: ['UMGR'], groups: [] },
  });
  const runId = await h.enqueueStart(job);
  const approval = await h.waitFor(
    'the approval',
    async () => (await h!.store.approvals.listForRun(runId))[0],
  );
  return { runId, approval };
}

describe('grants are checked like the grantor clicking Approve', () => {
  it("a manager's grant does not approve his own request when self-approval is off", async () => {
    const { approval } = await askUnderGrant('UMGR', 'UMGR');
    expect(approval).toMatchObject({ status: 'pending', decidedBy: null });
    expect(approval.via).toBeUndefined();
    await h!.waitFor('the card', () => h!.notifier.of('card')[0]);
    expect(h!.executed).toEqual([]);
  });

  it('does approve his own request where the rule allows self-approval', async () => {
    const { runId, approval } = await askUnderGrant('UMGR', 'UMGR', ask({ selfApproval: true }));
    expect(approval).toMatchObject({ status: 'approved', via: 'grant', decidedBy: 'UMGR' });
    await h!.waitForStatus(runId, 'completed');
  });

  it("approves someone else's matching call as the grantor's approval", async () => {
    const { runId, approval } = await askUnderGrant('UMGR', 'UREQ');
    expect(approval).toMatchObject({ status: 'approved', via: 'grant', decidedBy: 'UMGR' });
    await h!.waitForStatus(runId, 'completed');
    expect(h!.executed.map((e) => e.tool)).toEqual(['restart']);
  });

  it('does not approve once the grantor is no longer an approver of the call', async () => {
    const { approval } = await askUnderGrant(
      'UMGR',
      'UREQ',
      ask({ approvers: { users: ['UREQ', 'UNEW'], groups: [] } }),
    );
    expect(approval).toMatchObject({ status: 'pending' });
    expect(approval.via).toBeUndefined();
  });

  it('counts as one approval only: a call needing two asks them', async () => {
    const { approval } = await askUnderGrant('UMGR', 'UREQ', ask({ quorum: 2 }));
    expect(approval).toMatchObject({ status: 'pending', quorum: 2 });
  });
});
