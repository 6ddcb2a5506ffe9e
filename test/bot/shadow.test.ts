/**
 * Would approve / Would reject on a shadow card, through the real bot (signed HTTP) and Redis: checked
 * like a real decision (approver rights, self-approval, the card's own channel), recorded first click
 * wins with who and when, audited as shadow_decision, the card redrawn; nothing queued, no ledger entry.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ACTION_IDS } from '../../src/slack/ids.js';
import {
  type BotFixture,
  CHANNEL,
  MANAGER,
  type PendingApproval,
  REQUESTER,
  STRANGER,
  startBotFixture,
} from './bot-fixture.js';

let fx: BotFixture;
let shadow: PendingApproval;
const REASON = 'shadow mode (approvals.mode is shadow): not executed';
beforeEach(async () => {
  fx = await startBotFixture();
  shadow = await fx.pendingApproval({ decided: { status: 'rejected', via: 'shadow', reason: REASON } });
});
afterEach(async () => {
  await fx.cleanup();
});

async function click(user: string, action: 'wouldApprove' | 'wouldReject' | 'approve', messageTs?: string) {
  const res = await fx.click({
    user,
    channel: CHANNEL,
    messageTs: messageTs ?? shadow.cardTs,
    threadTs: shadow.threadTs,
    action: { actionId: ACTION_IDS[action], value: shadow.approvalId },
  });
  expect(res.status).toBe(200);
  await fx.bot.idle();
}

const record = () => fx.store.approvals.get(shadow.approvalId);
const cardUpdates = () => fx.fake.callsOf('chat.update').filter((c) => c.args.ts === shadow.cardTs);
const ephemeralsFor = (user: string) => fx.fake.ephemerals(CHANNEL).filter((e) => e.user === user);
const shadowEvents = async () =>
  (await fx.store.audit.recent()).map((a) => a.entry).filter((e) => e.event === 'shadow_decision');

describe('shadow cards', () => {
  it('the card says it will not run and offers only Would approve / Would reject', () => {
    const card = JSON.stringify(fx.fake.message(CHANNEL, shadow.cardTs)?.blocks);
    expect(card).toContain('Shadow: this will not run');
    expect(card).toContain(ACTION_IDS.wouldApprove);
    expect(card).toContain(ACTION_IDS.wouldReject);
    expect(card).not.toContain(`"${ACTION_IDS.approve}"`);
  });

  it('Would approve by an approver: recorded with who and when, audited, card redrawn; nothing queued or run', async () => {
    await click(MANAGER, 'wouldApprove');
    const stored = await record();
    expect(stored).toMatchObject({
      status: 'rejected',
      via: 'shadow',
      shadowDecision: { decision: 'would_approve', by: MANAGER },
    });
    expect(stored?.shadowDecision?.at).toBeGreaterThanOrEqual(stored?.createdAt ?? Infinity);
    expect(await fx.store.ledger.get(shadow.approvalId)).toBeNull();
    expect(await fx.jobs()).toEqual([]);
    expect(await shadowEvents()).toEqual([
      expect.objectContaining({ decider: MANAGER, note: 'would_approve', decision: '' }),
    ]);
    await expect.poll(() => cardUpdates().length).toBe(1);
    const blocks = JSON.stringify(cardUpdates()[0]?.args.blocks);
    expect(blocks).toContain(`<@${MANAGER}> *would have approved*`);
    expect(blocks).not.toContain(ACTION_IDS.wouldApprove);
  });

  it('first click wins: a later Would reject is refused and told who answered', async () => {
    await click(MANAGER, 'wouldReject');
    await click(MANAGER, 'wouldApprove');
    expect((await record())?.shadowDecision).toMatchObject({ decision: 'would_reject', by: MANAGER });
    expect(await shadowEvents()).toHaveLength(1);
    await expect.poll(() => ephemeralsFor(MANAGER).at(-1)?.text ?? '').toContain('answered first');
  });

  it('checked like a real decision: a stranger and the requester (no self-approval) may not say Would approve', async () => {
    await click(STRANGER, 'wouldApprove');
    await click(REQUESTER, 'wouldApprove');
    expect((await record())?.shadowDecision).toBeUndefined();
    expect(await shadowEvents()).toEqual([]);
    await expect.poll(() => ephemeralsFor(STRANGER).at(-1)?.text ?? '').toContain('You may not approve');
    await expect.poll(() => ephemeralsFor(REQUESTER).at(-1)?.text ?? '').toContain('requesters approve');
  });

  it('a click from another message than the card is ignored', async () => {
    await click(MANAGER, 'wouldApprove', '1.234');
    expect((await record())?.shadowDecision).toBeUndefined();
  });

  it('Approve on a shadow call (a forged button) records nothing and queues nothing', async () => {
    await click(MANAGER, 'approve');
    expect(await record()).toMatchObject({ status: 'rejected', via: 'shadow' });
    expect(await fx.store.ledger.get(shadow.approvalId)).toBeNull();
    expect(await fx.jobs()).toEqual([]);
  });

  it('Would approve on an ordinary approval is refused: it stays pending', async () => {
    const ordinary = await fx.pendingApproval();
    const res = await fx.click({
      user: MANAGER,
      channel: CHANNEL,
      messageTs: ordinary.cardTs,
      threadTs: ordinary.threadTs,
      action: { actionId: ACTION_IDS.wouldApprove, value: ordinary.approvalId },
    });
    expect(res.status).toBe(200);
    await fx.bot.idle();
    expect(await fx.store.approvals.get(ordinary.approvalId)).toMatchObject({ status: 'pending' });
    expect((await fx.store.approvals.get(ordinary.approvalId))?.shadowDecision).toBeUndefined();
  });
});
