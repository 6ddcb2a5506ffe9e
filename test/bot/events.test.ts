import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startJobId } from '../../src/queue/index.js';
import {
  appMentionEvent,
  directMessageEvent,
  eventBody,
  eventEnvelope,
  nowSeconds,
  threadReplyEvent,
} from '../fakes/slack-signing.js';
import { type BotFixture, CHANNEL, REQUESTER, startBotFixture } from './bot-fixture.js';

let fx: BotFixture;
beforeEach(async () => {
  fx = await startBotFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

const startJobs = async () => (await fx.jobs()).filter((job) => job.name === 'start');

describe('questions become start jobs', () => {
  it('a mention enqueues one start job with the event id, the thread and the question without the mention', async () => {
    const question = fx.fake.userMessage({ channel: CHANNEL, user: REQUESTER, text: 'q' });
    const before = Date.now();
    const { res, eventId } = await fx.mention({
      channel: CHANNEL,
      user: REQUESTER,
      ts: question.ts,
      text: `<@${fx.fake.botUserId}>   is payments healthy?`,
    });
    expect(res.status).toBe(200);
    const jobs = await startJobs();
    expect(jobs).toHaveLength(1);
    expect(jobs[0]?.id).toBe(startJobId(eventId));
    expect(jobs[0]?.data).toEqual({
      v: 1,
      eventId,
      teamId: fx.fake.teamId,
      channelId: CHANNEL,
      threadTs: question.ts,
      messageTs: question.ts,
      userId: REQUESTER,
      text: 'is payments healthy?',
      kind: 'mention',
      receivedAt: expect.any(Number),
    });
    expect(jobs[0]?.data).toMatchObject({ receivedAt: expect.toSatisfy((at: number) => at >= before) });
  });

  it("Slack's retry of the same event (X-Slack-Retry-Num) enqueues nothing more", async () => {
    const event = appMentionEvent(fx.id, {
      channel: CHANNEL,
      user: REQUESTER,
      text: `<@${fx.fake.botUserId}> hi`,
    });
    const first = await fx.sendEvent(event);
    const retry1 = await fx.sendEvent(event, { eventId: first.eventId, retryNum: 1 });
    const retry2 = await fx.sendEvent(event, { eventId: first.eventId, retryNum: 2 });
    expect([first.res.status, retry1.res.status, retry2.res.status]).toEqual([200, 200, 200]);
    expect(await startJobs()).toHaveLength(1);
  });

  it('a burst of mentions, with Slack retries arriving at the same moment, queues one job per event', async () => {
    // Twenty people at once: one person's burst is rate-limited (see "floods are bounded").
    const events = Array.from({ length: 20 }, (_, i) =>
      appMentionEvent(fx.id, {
        channel: CHANNEL,
        user: `U0BURST${String(i).padStart(2, '0')}`,
        text: `<@${fx.fake.botUserId}> question ${i}`,
      }),
    );
    const ids = events.map((_, i) => `EvBURST${String(i).padStart(4, '0')}`);
    const sends = events.flatMap((event, i) => [
      fx.sendEvent(event, { eventId: ids[i] }),
      fx.sendEvent(event, { eventId: ids[i], retryNum: 1 }),
    ]);
    const responses = await Promise.all(sends);
    expect(responses.every((r) => r.res.status === 200)).toBe(true);
    await fx.bot.idle();
    const jobs = await startJobs();
    expect(jobs.map((j) => j.id).sort()).toEqual(ids.map(startJobId).sort());
  });

  it('a mention in a thread answers in that thread', async () => {
    const parent = fx.fake.userMessage({ channel: CHANNEL, user: REQUESTER, text: 'incident' });
    await fx.mention({ channel: CHANNEL, user: REQUESTER, threadTs: parent.ts });
    const [job] = await startJobs();
    expect(job?.data).toMatchObject({ threadTs: parent.ts, kind: 'mention' });
    expect(job?.data).not.toMatchObject({ messageTs: parent.ts });
  });

  it('a direct message enqueues a dm job', async () => {
    const { res } = await fx.sendEvent(
      directMessageEvent(fx.id, { channel: 'D0ALICE', user: REQUESTER, text: 'what is the error rate?' }),
    );
    expect(res.status).toBe(200);
    const [job] = await startJobs();
    expect(job?.data).toMatchObject({ kind: 'dm', channelId: 'D0ALICE', text: 'what is the error rate?' });
  });
});

describe('requests that are not from Slack', () => {
  it('refuses a forged signature and a stale timestamp with 401 and enqueues nothing', async () => {
    const body = eventBody(
      eventEnvelope(
        fx.id,
        appMentionEvent(fx.id, { channel: CHANNEL, user: REQUESTER, text: `<@${fx.fake.botUserId}> hi` }),
      ),
    );
    const forged = await fx.post(body, { secret: 'not-the-signing-secret' });
    const garbage = await fx.post(body, { signature: 'v0=deadbeef' });
    const stale = await fx.post(body, { timestamp: nowSeconds() - 6 * 60 });
    expect([forged.status, garbage.status, stale.status]).toEqual([401, 401, 401]);
    expect(await fx.jobs()).toHaveLength(0);
    // The same body, correctly signed and fresh, is taken: the refusals were about the signature only.
    expect((await fx.post(body)).status).toBe(200);
    await fx.bot.idle();
    expect(await startJobs()).toHaveLength(1);
  });
});

describe('messages that are ignored', () => {
  it("ignores the bot's own messages, edits, deletions, other bots and bot_message subtypes", async () => {
    const thread = await fx.threadWithHistory();
    const reply = (user: string, extra: Record<string, unknown> = {}) =>
      threadReplyEvent(fx.id, { channel: CHANNEL, user, text: 'follow-up', threadTs: thread, extra });
    const responses = await Promise.all([
      fx.sendEvent(reply(fx.fake.botUserId)),
      fx.sendEvent(reply(fx.fake.botUserId, { bot_id: fx.fake.botId, subtype: 'bot_message' })),
      fx.sendEvent(reply(REQUESTER, { subtype: 'message_changed' })),
      fx.sendEvent(reply(REQUESTER, { subtype: 'message_deleted' })),
      fx.sendEvent(reply('U0OTHERBOT', { bot_id: 'B0OTHER' })),
      fx.sendEvent(
        appMentionEvent(fx.id, {
          channel: CHANNEL,
          user: 'U0OTHERBOT',
          text: `<@${fx.fake.botUserId}> hello from a bot`,
          extra: { bot_id: 'B0OTHER' },
        }),
      ),
      fx.sendEvent(
        appMentionEvent(fx.id, {
          channel: CHANNEL,
          user: REQUESTER,
          text: `<@${fx.fake.botUserId}> edited`,
          extra: { edited: { user: REQUESTER, ts: '1.1' } },
        }),
      ),
    ]);
    expect(responses.map((r) => r.res.status)).toEqual([200, 200, 200, 200, 200, 200, 200]);
    await fx.bot.idle();
    expect(await fx.jobs()).toHaveLength(0);
    expect(fx.fake.ephemerals()).toHaveLength(0);
  });

  it('ignores channel messages outside threads and replies in threads loopgate does not work in', async () => {
    const other = fx.fake.userMessage({ channel: CHANNEL, user: REQUESTER, text: 'lunch?' }).ts;
    await fx.sendEvent(
      threadReplyEvent(fx.id, { channel: CHANNEL, user: REQUESTER, text: 'yes', threadTs: other }),
    );
    await fx.sendEvent({
      type: 'message',
      channel_type: 'channel',
      channel: CHANNEL,
      user: REQUESTER,
      text: 'plain channel chatter',
      ts: `${nowSeconds()}.000001`,
    });
    expect(await fx.jobs()).toHaveLength(0);
  });

  it('a reply that mentions the bot arrives twice (app_mention and message) and starts one run', async () => {
    const thread = await fx.threadWithHistory();
    const input = {
      channel: CHANNEL,
      user: REQUESTER,
      text: `<@${fx.fake.botUserId}> and now?`,
      threadTs: thread,
    };
    const ts = `${nowSeconds()}.000777`;
    await fx.sendEvent(appMentionEvent(fx.id, { ...input, ts }));
    await fx.sendEvent(threadReplyEvent(fx.id, { ...input, ts }));
    const jobs = await startJobs();
    expect(jobs.map((j) => (j.data as { kind: string }).kind)).toEqual(['mention']);
  });

  it('outside channels.allow: no job, and the asker is told where loopgate works (once, not on retries)', async () => {
    await fx.cleanup();
    fx = await startBotFixture({ policyYaml: 'channels: { allow: [C0OPS, C0INCIDENTS] }' });
    const event = appMentionEvent(fx.id, {
      channel: 'C0RANDOM',
      user: REQUESTER,
      text: `<@${fx.fake.botUserId}> hi`,
    });
    const { res, eventId } = await fx.sendEvent(event);
    await fx.sendEvent(event, { eventId, retryNum: 1 });
    expect(res.status).toBe(200);
    await fx.bot.idle();
    expect(await fx.jobs()).toHaveLength(0);
    const notes = fx.fake.ephemerals('C0RANDOM');
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({ user: REQUESTER });
    expect(notes[0]?.text).toContain('<#C0OPS>, <#C0INCIDENTS>');
    // An allowed channel still works.
    await fx.mention({ channel: CHANNEL, user: REQUESTER });
    expect(await startJobs()).toHaveLength(1);
  });

  it('a bare mention without a question gets a hint instead of a run', async () => {
    await fx.mention({ channel: CHANNEL, user: REQUESTER, text: `<@${fx.fake.botUserId}>` });
    await fx.bot.idle();
    expect(await fx.jobs()).toHaveLength(0);
    expect(fx.fake.ephemerals(CHANNEL)[0]?.text).toContain('Ask me something');
  });
});

describe('follow-ups in threads where loopgate works', () => {
  it('a reply without a mention in a thread with history continues the conversation', async () => {
    const thread = await fx.threadWithHistory();
    const { res } = await fx.sendEvent(
      threadReplyEvent(fx.id, { channel: CHANNEL, user: 'U0BOB', text: 'and search?', threadTs: thread }),
    );
    expect(res.status).toBe(200);
    const [job] = await startJobs();
    expect(job?.data).toMatchObject({
      kind: 'thread_reply',
      threadTs: thread,
      userId: 'U0BOB',
      text: 'and search?',
    });
  });

  it('a message while the run waits for approval is queued, and the person gets a link to the card', async () => {
    const pending = await fx.pendingApproval();
    const { res } = await fx.sendEvent(
      threadReplyEvent(fx.id, {
        channel: CHANNEL,
        user: 'U0BOB',
        text: 'any news?',
        threadTs: pending.threadTs,
      }),
    );
    expect(res.status).toBe(200);
    const [job] = await startJobs();
    expect(job?.data).toMatchObject({ kind: 'thread_reply', threadTs: pending.threadTs, text: 'any news?' });
    await fx.bot.idle();
    const [note] = fx.fake.ephemerals(CHANNEL);
    expect(note).toMatchObject({ user: 'U0BOB', thread_ts: pending.threadTs });
    const permalink = await fx.fake.waitForCall('chat.getPermalink');
    expect(permalink.args).toMatchObject({ channel: CHANNEL, message_ts: pending.cardTs });
    expect(note?.text).toContain(`<${String(permalink.response?.permalink)}|\`http_request\`>`);
    expect(note?.text).toContain('will be answered when that run finishes');
    // The approval is untouched.
    expect((await fx.store.approvals.get(pending.approvalId))?.status).toBe('pending');
  });

  it('while Redis refuses the job for a moment, queueing is retried before the ack, and the 200 means queued', async () => {
    const addBulk = vi
      .spyOn(fx.queue, 'addBulk')
      .mockRejectedValueOnce(new Error('Connection is closed.'))
      .mockRejectedValueOnce(new Error('Connection is closed.'));
    const { res, eventId } = await fx.mention({ channel: CHANNEL, user: REQUESTER });
    expect(res.status).toBe(200);
    expect(addBulk).toHaveBeenCalledTimes(3);
    expect((await startJobs()).map((j) => j.id)).toEqual([startJobId(eventId)]);
    expect(fx.fake.ephemerals()).toHaveLength(0);
  });

  it('a question that cannot be queued is not acked (500, for Slack to deliver it again); the redelivery is taken once', async () => {
    const addBulk = vi.spyOn(fx.queue, 'addBulk').mockRejectedValue(new Error('Connection is closed.'));
    const event = appMentionEvent(fx.id, {
      channel: CHANNEL,
      user: REQUESTER,
      text: `<@${fx.fake.botUserId}> is payments healthy?`,
    });
    const started = performance.now();
    const first = await fx.sendEvent(event);
    // Answered within Slack's 3 s, as an error: Slack delivers the event again.
    expect(first.res.status).toBe(500);
    expect(performance.now() - started).toBeLessThan(3_000);
    // The first attempt and one per retry delay (4).
    expect(addBulk).toHaveBeenCalledTimes(5);
    expect(await fx.jobs()).toHaveLength(0);
    // Slack will deliver again: the person is not asked to repeat themselves.
    expect(fx.fake.ephemerals(CHANNEL)).toHaveLength(0);

    addBulk.mockRestore();
    const again = await fx.sendEvent(event, { eventId: first.eventId, retryNum: 1 });
    expect(again.res.status).toBe(200);
    const twice = await fx.sendEvent(event, { eventId: first.eventId, retryNum: 2 });
    expect(twice.res.status).toBe(200);
    expect((await startJobs()).map((j) => j.id)).toEqual([startJobId(first.eventId)]);
  });

  it("only when Slack's last redelivery cannot be queued either is the person asked to send it again", async () => {
    vi.spyOn(fx.queue, 'addBulk').mockRejectedValue(new Error('Connection is closed.'));
    const event = appMentionEvent(fx.id, {
      channel: CHANNEL,
      user: REQUESTER,
      text: `<@${fx.fake.botUserId}> is payments healthy?`,
    });
    const first = await fx.sendEvent(event);
    const second = await fx.sendEvent(event, { eventId: first.eventId, retryNum: 2 });
    expect(fx.fake.ephemerals(CHANNEL)).toHaveLength(0);
    const last = await fx.sendEvent(event, { eventId: first.eventId, retryNum: 3 });
    expect([first.res.status, second.res.status, last.res.status]).toEqual([500, 500, 500]);
    const [note] = fx.fake.ephemerals(CHANNEL);
    expect(note).toMatchObject({ user: REQUESTER });
    expect(note?.text).toContain('could not take your message');
    expect(await fx.jobs()).toHaveLength(0);
  });

  it('a store that does not answer (Redis gone, commands buffered) is answered 500 at the deadline, not after Slack gave up', async () => {
    await fx.cleanup();
    fx = await startBotFixture({ queueDeadlineMs: 300 });
    const thread = await fx.threadWithHistory();
    // A thread reply needs the thread's memory; the store's reads hang as they do while Redis reconnects.
    vi.spyOn(fx.store.threads, 'activeRun').mockReturnValue(new Promise(() => {}));
    const started = performance.now();
    const { res } = await fx.sendEvent(
      threadReplyEvent(fx.id, { channel: CHANNEL, user: 'U0BOB', text: 'and search?', threadTs: thread }),
    );
    expect(res.status).toBe(500);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(await fx.jobs()).toHaveLength(0);
  });
});

describe('floods are bounded', () => {
  const restart = async (inbound: string) => {
    await fx.cleanup();
    fx = await startBotFixture({
      policyYaml: `approvals: { approvers: [U0MANAGER] }\ninbound: { ${inbound} }`,
    });
  };
  const notesTo = (user: string) => fx.fake.ephemerals(CHANNEL).filter((e) => e.user === user);

  it('a question longer than inbound.maxQuestionChars is refused with a reply, and nothing is queued', async () => {
    await restart('maxQuestionChars: 4000');
    const long = 'x'.repeat(600_000);
    await fx.mention({ channel: CHANNEL, user: REQUESTER, text: `<@${fx.fake.botUserId}> ${long}` });
    await fx.bot.idle();
    expect(await startJobs()).toHaveLength(0);
    expect(notesTo(REQUESTER).map((n) => n.text)).toEqual([
      'Your message is 600,000 characters long; I take questions of up to 4,000. Please shorten it and send it again.',
    ]);
    // One at the limit is taken.
    await fx.mention({
      channel: CHANNEL,
      user: REQUESTER,
      text: `<@${fx.fake.botUserId}> ${'y'.repeat(4000)}`,
    });
    expect(await startJobs()).toHaveLength(1);
  });

  it('one person past inbound.perUserPerMinute is told when to try again; others are not affected', async () => {
    await restart('perUserPerMinute: 3');
    for (let i = 0; i < 4; i++) {
      await fx.mention({ channel: CHANNEL, user: REQUESTER, text: `<@${fx.fake.botUserId}> question ${i}` });
    }
    await fx.bot.idle();
    expect(await startJobs()).toHaveLength(3);
    const [note] = notesTo(REQUESTER);
    expect(note?.text).toMatch(
      /^You have sent me 3 messages in the last minute, which is as many as I take\. Please try again in \d+ seconds?\.$/,
    );
    await fx.mention({ channel: CHANNEL, user: 'U0BOB', text: `<@${fx.fake.botUserId}> mine` });
    expect(await startJobs()).toHaveLength(4);
  });

  it("Slack's retries of a message do not count toward the rate limits", async () => {
    await restart('perUserPerMinute: 2');
    const event = appMentionEvent(fx.id, {
      channel: CHANNEL,
      user: REQUESTER,
      text: `<@${fx.fake.botUserId}> first`,
    });
    const first = await fx.sendEvent(event);
    await fx.sendEvent(event, { eventId: first.eventId, retryNum: 1 });
    await fx.sendEvent(event, { eventId: first.eventId, retryNum: 2 });
    await fx.mention({ channel: CHANNEL, user: REQUESTER, text: `<@${fx.fake.botUserId}> second` });
    await fx.bot.idle();
    expect(await startJobs()).toHaveLength(2);
    expect(notesTo(REQUESTER)).toEqual([]);
  });

  it('a retry whose first delivery timed out before being counted is held to the rate limits', async () => {
    await restart('perUserPerMinute: 1');
    await fx.mention({ channel: CHANNEL, user: REQUESTER, text: `<@${fx.fake.botUserId}> first` });
    const event = appMentionEvent(fx.id, {
      channel: CHANNEL,
      user: REQUESTER,
      text: `<@${fx.fake.botUserId}> second`,
    });
    // The first delivery of the second message waits on Redis past the deadline: nothing counted yet.
    vi.spyOn(fx.store.rates, 'hit').mockReturnValueOnce(new Promise(() => {}));
    const first = await fx.sendEvent(event);
    expect(first.res.status).toBe(500);
    vi.mocked(fx.store.rates.hit).mockRestore();
    const retry = await fx.sendEvent(event, { eventId: first.eventId, retryNum: 1 });
    expect(retry.res.status).toBe(200);
    await fx.bot.idle();
    expect((await startJobs()).map((j) => j.data.text)).toEqual(['first']);
    expect(notesTo(REQUESTER).map((n) => n.text)).toEqual([
      expect.stringMatching(/^You have sent me 1 messages in the last minute/),
    ]);
  });

  it('a retry of a refused message is refused too, and the person is told once', async () => {
    await restart('perUserPerMinute: 1, perThreadPerMinute: 5');
    await fx.mention({ channel: CHANNEL, user: REQUESTER, text: `<@${fx.fake.botUserId}> first` });
    const event = appMentionEvent(fx.id, {
      channel: CHANNEL,
      user: REQUESTER,
      text: `<@${fx.fake.botUserId}> second`,
    });
    const first = await fx.sendEvent(event);
    for (const retryNum of [1, 2, 3]) await fx.sendEvent(event, { eventId: first.eventId, retryNum });
    await fx.bot.idle();
    expect((await startJobs()).map((j) => j.data.text)).toEqual(['first']);
    expect(notesTo(REQUESTER)).toHaveLength(1);
  });

  it('a thread past inbound.perThreadPerMinute is told when to try again', async () => {
    await restart('perThreadPerMinute: 2');
    const parent = fx.fake.userMessage({ channel: CHANNEL, user: REQUESTER, text: 'incident' });
    for (const user of ['U0A', 'U0B', 'U0C']) {
      await fx.mention({
        channel: CHANNEL,
        user,
        threadTs: parent.ts,
        text: `<@${fx.fake.botUserId}> from ${user}`,
      });
    }
    await fx.bot.idle();
    expect(await startJobs()).toHaveLength(2);
    expect(notesTo('U0C')[0]?.text).toMatch(
      /^This thread has had 2 messages for me in the last minute, which is as many as I take\. Please try again in \d+ seconds?\.$/,
    );
  });

  it('a thread whose inbox holds inbound.maxQueuedPerThread messages refuses the next with a reply', async () => {
    await restart('maxQueuedPerThread: 2');
    const pending = await fx.pendingApproval();
    for (const [i, job] of [{ eventId: 'Ev1' }, { eventId: 'Ev2' }].entries()) {
      expect(
        await fx.store.threads.claim(
          { teamId: fx.fake.teamId, channelId: CHANNEL, threadTs: pending.threadTs },
          `r-queued${i}`,
          job,
        ),
      ).toBe('queued');
    }
    await fx.sendEvent(
      threadReplyEvent(fx.id, {
        channel: CHANNEL,
        user: 'U0BOB',
        text: 'any news?',
        threadTs: pending.threadTs,
      }),
    );
    await fx.bot.idle();
    expect(await startJobs()).toHaveLength(0);
    expect(notesTo('U0BOB').map((n) => [n.thread_ts, n.text])).toEqual([
      [
        pending.threadTs,
        '2 messages are already waiting in this thread for the run working here. Please send yours again once it has answered.',
      ],
    ]);
  });
});
