/**
 * A timer acts only on the round it was made for (issue 21, item 1): once a call was edited, the old
 * round's escalation and expiry do nothing to the edited round (which another rule may ask for); the
 * edited round's own timers are there (re-added by the old round's expiry, should the bot have failed to).
 */
import { afterEach, expect, it } from 'vitest';
import { argsHash } from '../../src/loop/hash.js';
import { escalateJobId, expireJobId } from '../../src/queue/index.js';
import { type ApprovalRecord, nextRoundOf } from '../../src/store/index.js';
import { call, scriptedModel } from '../support/engine.js';
import { createHarness } from '../support/worker-harness.js';

let h: Awaited<ReturnType<typeof createHarness>> | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

it("the old round's escalation and expiry leave an edited round alone", async () => {
  h = await createHarness({
    model: scriptedModel([
      { calls: [call('restart', { service: 'payments', env: 'staging' })] },
      { text: 'ok' },
    ]),
    gate: () => ({
      kind: 'ask',
      rule: { index: 0, label: 'rule 1 of restart (staging)' },
      approvers: { users: ['UMGR'], groups: [] },
      quorum: 1,
      selfApproval: false,
      expiresAfterMs: 2_000,
      remindAtPercent: [],
      escalation: { to: { users: [], groups: ['S0BROAD'] }, afterMs: 800 },
      grant: null,
    }),
  });
  h.startWorker();
  await h.enqueueStart(h.startJob('restart payments'));
  const card = await h.waitFor('card', () => h!.notifier.of('card')[0]);
  const old = (await h.store.approvals.get(card.view.approvalId)) as ApprovalRecord;
  const args = { service: 'payments', env: 'prod' };
  const now = Date.now();
  // The edited round as the prod rule asks it: two leads, its own (later) escalation and expiry.
  const next = await h.store.approvals.edit({
    approvalId: old.approvalId,
    editedBy: 'UMGR',
    now,
    next: {
      ...old,
      approvalId: nextRoundOf(old.approvalId),
      args,
      argsHash: argsHash(args),
      createdAt: now,
      expiresAt: now + 600_000,
      approvers: { users: ['ULEADA', 'ULEADB'], groups: [] },
      quorum: 2,
      rule: 'rule 2 of restart (prod)',
      escalation: { to: { users: ['UDIRECTOR'], groups: [] }, afterMs: 300_000 },
      card: null,
      original: { args: old.args, argsHash: old.argsHash },
      editedBy: 'UMGR',
      editOf: old.approvalId,
    },
  });
  expect(next.status).toBe('pending');

  const finished = async (id: string) => (await h!.queue.getJob(id))?.finishedOn !== undefined;
  await h.waitFor('the old round escalation timer', () => finished(escalateJobId(old.approvalId)));
  await h.waitFor('the old round expiry timer', () => finished(expireJobId(old.approvalId)));

  const after = await h.store.approvals.get(next.approvalId);
  expect(after).toMatchObject({ status: 'pending', approvers: { users: ['ULEADA', 'ULEADB'], groups: [] } });
  expect(after?.escalatedAt).toBeUndefined();
  const events = (await h.store.audit.recent(10)).map((a) => a.entry.event);
  expect(events).not.toContain('escalation');
  expect(h.notifier.of('note')).toEqual([]);
  // The edited round's own expiry is scheduled (re-added by the old round's expiry; ids make it once).
  expect((await h.queue.getJob(expireJobId(next.approvalId)))?.finishedOn).toBeUndefined();
  expect(await h.queue.getJob(expireJobId(next.approvalId))).toBeDefined();
});
