import { afterEach, describe, expect, it } from 'vitest';
import { ACTION_IDS, CALLBACK_IDS, REJECT_REASON_INPUT } from '../../src/slack/ids.js';
import { createStore, nextRoundOf } from '../../src/store/index.js';
import { interactivityBody, viewSubmissionPayload } from '../fakes/slack-signing.js';
import { type BotFixture, CHANNEL, MANAGER, startBotFixture } from './bot-fixture.js';

// The test Redis at 127.0.0.1:6379 has no replicas, so with REDIS_WAIT_REPLICAS 1 no decision is ever
// confirmed: the click must be told so, and nothing may look decided.
const NOT_RECORDED =
  'Your decision was not recorded: Redis could not confirm that it reached a replica. Nothing was changed; please try again in a moment.';

let fx: BotFixture | undefined;
afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
});

describe('a click whose decision no Redis replica confirms (REDIS_WAIT_REPLICAS)', () => {
  it('is told it was not recorded; the card, the approval, the audit log and the queue are unchanged', async () => {
    fx = await startBotFixture({ store: { waitReplicas: 1, waitTimeoutMs: 50 } });
    const pending = await fx.pendingApproval();
    const res = await fx.click({
      user: MANAGER,
      channel: CHANNEL,
      messageTs: pending.cardTs,
      threadTs: pending.threadTs,
      action: { actionId: ACTION_IDS.approve, value: pending.approvalId },
    });
    expect(res.status).toBe(200);
    await fx.bot.idle();
    const told = fx.fake.ephemerals(CHANNEL).filter((e) => e.user === MANAGER);
    expect(told.map((e) => e.text)).toEqual([NOT_RECORDED]);
    expect(await fx.store.approvals.get(pending.approvalId)).toMatchObject({
      status: 'pending',
      decidedBy: null,
      decidedAt: null,
    });
    expect(await fx.store.ledger.get(pending.approvalId)).toBeNull();
    expect(fx.fake.callsOf('chat.update').filter((c) => c.args.ts === pending.cardTs)).toHaveLength(0);
    expect((await fx.jobs()).filter((job) => job.name === 'resume')).toHaveLength(0);
    expect(await fx.store.audit.recent()).toHaveLength(0);
    // Still pending in the index, so "approvals I may decide" lists it for the retry.
    expect((await fx.store.approvals.listPending(Date.now())).map((r) => r.approvalId)).toEqual([
      pending.approvalId,
    ]);
  });

  it('a Reject reason submitted then: the modal says it was not recorded, and the approval stays pending', async () => {
    fx = await startBotFixture({ store: { waitReplicas: 1, waitTimeoutMs: 50 } });
    const pending = await fx.pendingApproval();
    const metadata = JSON.stringify({
      approvalId: pending.approvalId,
      channel: CHANNEL,
      messageTs: pending.cardTs,
    });
    const res = await fx.post(
      interactivityBody(
        viewSubmissionPayload(fx.id, {
          user: MANAGER,
          callbackId: CALLBACK_IDS.rejectReason,
          privateMetadata: metadata,
          values: {
            [REJECT_REASON_INPUT.blockId]: {
              [REJECT_REASON_INPUT.actionId]: { type: 'plain_text_input', value: 'not now' },
            },
          },
        }),
      ),
    );
    const answer = (await res.json()) as { response_action: string; view: { blocks: unknown[] } };
    expect(answer.response_action).toBe('update');
    expect(JSON.stringify(answer.view.blocks)).toContain('Your decision was not recorded');
    await fx.bot.idle();
    expect((await fx.store.approvals.get(pending.approvalId))?.status).toBe('pending');
    expect(fx.fake.callsOf('chat.update').filter((c) => c.args.ts === pending.cardTs)).toHaveLength(0);
    expect(await fx.store.audit.recent()).toHaveLength(0);
  });

  it('"Approve again" on a call that was not run: not recorded, no new round, the card unchanged', async () => {
    fx = await startBotFixture({ store: { waitReplicas: 1, waitTimeoutMs: 50 } });
    const pending = await fx.pendingApproval();
    const { context } = fx.store;
    // Approved through a store without WAIT; the call's start then goes unconfirmed, so it is not run.
    const plain = createStore(context.redis, { prefix: context.options.prefix });
    await plain.approvals.decide({
      approvalId: pending.approvalId,
      decision: 'approved',
      decidedBy: MANAGER,
      now: Date.now(),
    });
    const lease = await fx.store.leases.acquire(pending.runId, 'worker', 30_000);
    if (!lease.acquired) throw new Error('lease not acquired');
    const begin = {
      approvalId: pending.approvalId,
      fence: lease.fence,
      argsHash: pending.record.argsHash,
      now: Date.now(),
    };
    await expect(fx.store.ledger.begin(begin)).rejects.toMatchObject({ code: 'durability_unconfirmed' });
    await fx.store.leases.release(pending.runId, lease.fence);
    expect((await fx.store.ledger.get(pending.approvalId))?.status).toBe('not_started');

    await fx.click({
      user: MANAGER,
      channel: CHANNEL,
      messageTs: pending.cardTs,
      threadTs: pending.threadTs,
      action: { actionId: ACTION_IDS.reapprove, value: pending.approvalId },
    });
    await fx.bot.idle();
    expect(
      fx.fake
        .ephemerals(CHANNEL)
        .filter((e) => e.user === MANAGER)
        .map((e) => e.text),
    ).toEqual([NOT_RECORDED]);
    const next = nextRoundOf(pending.approvalId);
    expect(await fx.store.approvals.get(next)).toBeNull();
    expect(await fx.store.ledger.get(next)).toBeNull();
    expect((await fx.store.approvals.listForRun(pending.runId)).map((r) => r.approvalId)).toEqual([
      pending.approvalId,
    ]);
    expect(fx.fake.callsOf('chat.update').filter((c) => c.args.ts === pending.cardTs)).toHaveLength(0);
    expect((await fx.jobs()).filter((job) => job.name === 'resume')).toHaveLength(0);
  });
});
