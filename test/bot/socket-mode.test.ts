/**
 * Socket Mode for real: the bot (SLACK_APP_TOKEN set) opens its connection with `apps.connections.open`
 * on SLACK_API_URL, then receives events, clicks and commands over a WebSocket from the fake endpoint and
 * acknowledges each envelope, exactly as over HTTP: one run per event, decisions checked and recorded,
 * commands answered in their acknowledgement.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { resumeJobId, startJobId } from '../../src/queue/index.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { runIdForEvent } from '../../src/store/index.js';
import {
  appMentionEvent,
  blockActionsPayload,
  eventEnvelope,
  slashCommandBody,
} from '../fakes/slack-signing.js';
import { type BotFixture, CHANNEL, MANAGER, REQUESTER, STRANGER, startBotFixture } from './bot-fixture.js';

let fx: BotFixture;
beforeEach(async () => {
  fx = await startBotFixture({ socketMode: true });
});
afterEach(async () => {
  await fx.cleanup();
});

const socket = () => {
  if (!fx.socket) throw new Error('not in Socket Mode');
  return fx.socket;
};

describe('Socket Mode', () => {
  it('connects with the app-level token through SLACK_API_URL', async () => {
    expect(fx.bot.mode).toBe('socket');
    const [open] = fx.fake.callsOf('apps.connections.open');
    expect(open?.headers.authorization).toBe('Bearer xapp-1-A0APP0001-fake');
    expect(open?.response?.ok).toBe(true);
    expect(socket().connections()).toBe(1);
  });

  it('acknowledges a mention and starts one run for it, however often Slack delivers it', async () => {
    const question = fx.fake.userMessage({ channel: CHANNEL, user: REQUESTER, text: 'is payments healthy?' });
    const envelope = eventEnvelope(
      fx.id,
      appMentionEvent(fx.id, {
        channel: CHANNEL,
        user: REQUESTER,
        text: `<@${fx.fake.botUserId}> is payments healthy?`,
        ts: question.ts,
      }),
    );
    const ack = await socket().send('events_api', envelope);
    expect(ack).toMatchObject({ envelope_id: expect.any(String) });
    await socket().send('events_api', envelope); // Slack's redelivery of the same event
    await fx.bot.idle();

    const starts = (await fx.jobs()).filter((j) => j.name === 'start');
    expect(starts.map((j) => j.data.eventId)).toEqual([envelope.event_id]);
    expect(starts[0]?.data).toMatchObject({ channelId: CHANNEL, userId: REQUESTER, threadTs: question.ts });
    expect(runIdForEvent(envelope.event_id)).toMatch(/^r-/);
  });

  it('acknowledges the envelope only once the start job is in Redis, and not at all when it cannot be queued', async () => {
    const mention = (text: string) => {
      const question = fx.fake.userMessage({ channel: CHANNEL, user: REQUESTER, text });
      return eventEnvelope(
        fx.id,
        appMentionEvent(fx.id, {
          channel: CHANNEL,
          user: REQUESTER,
          text: `<@${fx.fake.botUserId}> ${text}`,
          ts: question.ts,
        }),
      );
    };
    const queued = mention('is search healthy?');
    await socket().send('events_api', queued);
    // No waiting for background work: the ack itself means the job is there.
    expect((await fx.jobs()).map((j) => j.id)).toEqual([startJobId(queued.event_id)]);

    const addBulk = vi.spyOn(fx.queue, 'addBulk').mockRejectedValue(new Error('Connection is closed.'));
    const lost = mention('is payments healthy?');
    await expect(socket().send('events_api', lost, 4_000)).rejects.toThrow('no ack');
    expect(addBulk).toHaveBeenCalled();
    expect((await fx.jobs()).map((j) => j.id)).toEqual([startJobId(queued.event_id)]);
  });

  it('takes a decision from a click, with the same checks as over HTTP', async () => {
    const pending = await fx.pendingApproval();
    const click = (user: string) =>
      socket().send(
        'interactive',
        blockActionsPayload(fx.id, {
          user,
          channel: CHANNEL,
          messageTs: pending.cardTs,
          threadTs: pending.threadTs,
          action: { actionId: ACTION_IDS.approve, value: pending.approvalId },
        }),
      );
    await click(STRANGER);
    await fx.bot.idle();
    expect((await fx.store.approvals.get(pending.approvalId))?.status).toBe('pending');
    expect(fx.fake.ephemerals(CHANNEL).find((e) => e.user === STRANGER)?.text).toContain(
      'You may not approve',
    );

    expect(await click(MANAGER)).toMatchObject({ envelope_id: expect.any(String) });
    await fx.bot.idle();
    expect(await fx.store.approvals.get(pending.approvalId)).toMatchObject({
      status: 'approved',
      decidedBy: MANAGER,
    });
    const resumes = (await fx.jobs()).filter((j) => j.name === 'resume');
    expect(resumes.map((j) => j.id)).toEqual([resumeJobId(pending.approvalId)]);
  });

  it('answers /loopgate in the acknowledgement', async () => {
    const { body } = slashCommandBody(fx.id, { user: REQUESTER, channel: CHANNEL, text: 'help' });
    const ack = await socket().send('slash_commands', Object.fromEntries(new URLSearchParams(body)));
    expect(ack.payload).toMatchObject({
      response_type: 'ephemeral',
      text: expect.stringContaining('/loopgate'),
    });
  });
});
