/**
 * End to end, with loopgate's real processes (`npm run bot` and one `npm run worker`) on a redis-server of
 * this file's own, which the tests kill and bring back: nothing is acked to Slack that is not in Redis.
 * A mention is acked once its job is queued; a mention during an outage is answered with an error, so
 * Slack delivers it again, and that redelivery (after the bot was SIGKILLed and restarted) is answered
 * once. A click during an outage is told its decision was not recorded, and its card stays as it was.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJobId } from '../../src/queue/job-ids.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { runIdForEvent } from '../../src/store/ids.js';
import { appMentionEvent, eventBody, eventEnvelope } from '../fakes/slack-signing.js';
import { type OwnRedis, ownRedis } from '../support/redis-server.js';
import {
  askToDeploy,
  DEPLOYED,
  expectPendingCard,
  expectRedrawnCard,
  postedWith,
} from './support/deploy-case.js';
import { answerAtOnce } from './support/model-brains.js';
import { wordsOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

let redis: OwnRedis;
let w: SlackWorld;
beforeAll(async () => {
  redis = await ownRedis();
  await redis.start();
  w = await startSlackWorld({ mode: 'split', workers: 1, redisUrl: redis.url });
}, 120_000);
afterAll(async () => {
  // The world cleans up through Redis: it must be up for that.
  await redis?.start();
  await w?.close();
  await redis?.remove();
}, 60_000);

const botReady = () =>
  fetch(w.botMetricsUrl.replace('/metrics', '/readyz')).then(
    (r) => r.status === 200,
    () => false,
  );

describe('acks and Redis outages through the real processes', { timeout: 90_000 }, () => {
  it('a mention is acked quickly, and the ack means its start job is already in Redis', async () => {
    const channel = w.newChannel();
    w.model.brain('normal', answerAtOnce('Payments is healthy.'));
    const started = performance.now();
    const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged('normal', 'is payments healthy?'));
    // Well within Slack's 3 s, on a loaded machine too.
    expect(performance.now() - started).toBeLessThan(2_500);
    expect(await w.queue.getJob(startJobId(asked.eventId))).toBeDefined();
    const run = await w.ended(asked.runId);
    expect(run.state.answer).toEqual(['Payments is healthy.']);
  });

  it('a click while Redis is down is told its decision was not recorded; the card stays, and a later click decides', async () => {
    const c = await askToDeploy(w, 'outage-click');
    await redis.kill();
    const res = await w.click(w.message(c.card), PEOPLE.manager, ACTION_IDS.approve);
    // Clicks are acked at once (Slack does not redeliver them); the answer is the ephemeral.
    expect(res.status).toBe(200);
    const note = await w.waitFor(
      'the note that the decision was not recorded',
      () => w.ephemeralsTo(PEOPLE.manager, c.channel)[0],
      45_000,
    );
    expect(note.text).toBe(
      'Your decision was not recorded (the approval store is unavailable); nothing was changed. Please try again in a moment.',
    );
    // The card was never redrawn: it still asks for a decision, with its buttons.
    expect(w.message(c.card).history).toEqual([]);
    expectPendingCard(w, c);
    expect(w.hits(c.url)).toEqual([]);

    await redis.start();
    await w.waitFor('the bot to be ready again', botReady, 45_000);
    expect((await w.store.approvals.get(c.card.approvalId))?.status).toBe('pending');
    expect((await w.click(w.message(c.card), PEOPLE.manager, ACTION_IDS.approve)).status).toBe(200);
    const run = await w.ended(c.asked.runId, 45_000);
    expect(run.state.status).toBe('completed');
    await expectRedrawnCard(w, c, new RegExp(`\\*Approved\\* by <@${PEOPLE.manager}>`));
    expect(w.hits(c.url)).toHaveLength(1);
    expect(postedWith(w, c, DEPLOYED)).toHaveLength(1);
  });

  it("a mention while Redis is down is not acked; the bot is SIGKILLed; after both are back, Slack's redelivery is answered once", async () => {
    const channel = w.newChannel();
    const answer = 'Search is healthy.';
    w.model.brain('outage-mention', answerAtOnce(answer));
    const text = `<@${w.id.botUserId}> ${w.model.tagged('outage-mention', 'is search healthy?')}`;
    const question = w.slack.userMessage({ channel, user: PEOPLE.requester, text });
    const envelope = eventEnvelope(
      w.id,
      appMentionEvent(w.id, { channel, user: PEOPLE.requester, text, ts: question.ts }),
    );
    const runId = runIdForEvent(envelope.event_id);

    await redis.kill();
    const sent = performance.now();
    const first = await w.post(eventBody(envelope));
    // Not a 2xx, and within Slack's 3 s: Slack delivers the event again.
    expect(first.status).toBe(500);
    expect(performance.now() - sent).toBeLessThan(3_000);

    const bot = w.processes.find((p) => p.entry === 'bot' && !p.exited());
    if (!bot) throw new Error('no bot process');
    bot.kill('SIGKILL');
    expect((await bot.exit).signal).toBe('SIGKILL');

    await redis.start();
    const restarted = w.startBot();
    await restarted.waitForLog((l) => l.msg === 'loopgate bot started', 'bot started', 60_000);
    await w.waitFor('the restarted bot to be ready', botReady, 45_000);
    // Nothing of the event reached Redis: the first delivery left no job and no run.
    const firstJob = await w.waitFor('the test to reach Redis again', () =>
      w.queue.getJob(startJobId(envelope.event_id)).then(
        (job) => ({ job }),
        () => undefined,
      ),
    );
    expect(firstJob.job).toBeUndefined();
    expect(await w.store.runs.loadRun(runId)).toBeNull();

    // Slack's redelivery: the same event_id, X-Slack-Retry-Num 1.
    const redelivery = await w.post(eventBody(envelope), { retryNum: 1, retryReason: 'http_error' });
    expect(redelivery.status).toBe(200);
    expect(await w.queue.getJob(startJobId(envelope.event_id))).toBeDefined();
    const run = await w.ended(runId, 45_000);
    expect(run.state.answer).toEqual([answer]);
    const answers = w.slack
      .thread(channel, question.ts)
      .filter((m) => m.bot_id && wordsOf(m).includes(answer));
    expect(answers).toHaveLength(1);
    expect(w.model.requestsOf('outage-mention')).toHaveLength(1);
  });
});
