/**
 * End to end, with loopgate's real processes (`npm run bot` and one `npm run worker`) against real Redis,
 * the fake Slack Web API and the fake OpenAI; every request reaches the bot signed as Slack signs it.
 * Questions and answers: a read tool, Slack's retries, forged and stale signatures, a follow-up in the
 * thread, the Details modal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJobId } from '../../src/queue/job-ids.js';
import { ACTION_IDS, CALLBACK_IDS } from '../../src/slack/ids.js';
import { runIdForEvent } from '../../src/store/ids.js';
import type { WireMessage } from '../fakes/openai-server.js';
import {
  appMentionEvent,
  eventBody,
  eventEnvelope,
  nowSeconds,
  slashCommandBody,
} from '../fakes/slack-signing.js';
import { answerAtOnce, callThenAnswer } from './support/model-brains.js';
import { buttonOf, wordsOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

let w: SlackWorld;
beforeAll(async () => {
  w = await startSlackWorld({ mode: 'split', workers: 1 });
}, 120_000);
afterAll(async () => {
  await w?.close();
}, 60_000);

const contentOf = (m: WireMessage | undefined) =>
  typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? null);

const healthy = (result: string) =>
  result.includes('all systems operational')
    ? 'Payments is healthy: the status page says all systems operational.'
    : 'I could not read the status page.';

describe('questions and answers through the real bot and worker processes', { timeout: 60_000 }, () => {
  it('answers a question with a read tool: the page is fetched once and the answer lands in the thread', async () => {
    const channel = w.newChannel();
    const url = w.statusUrl('payments');
    w.model.brain('read', callThenAnswer('http_get', { url }, healthy));

    const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged('read', 'is payments healthy?'));
    const run = await w.ended(asked.runId);

    expect(run.state.status).toBe('completed');
    expect(w.hits(url).map((r) => r.method)).toEqual(['GET']);
    // The model asked for the tool, then read its result.
    const requests = w.model.requestsOf('read');
    expect(requests).toHaveLength(2);
    const lastSeen = requests[1]?.body.messages.at(-1);
    expect(lastSeen?.role).toBe('tool');
    expect(contentOf(lastSeen)).toContain('all systems operational');
    // What people see: one answer in the thread with a Details button, no progress message left, and the
    // question marked done.
    const thread = w.slack.thread(channel, asked.threadTs);
    const answers = thread.filter((m) => wordsOf(m).includes('Payments is healthy'));
    expect(answers).toHaveLength(1);
    expect(answers[0]?.thread_ts).toBe(asked.threadTs);
    expect(buttonOf(answers[0]!, ACTION_IDS.details)?.value).toBe(asked.runId);
    expect(thread.filter((m) => m.text.startsWith(':hourglass'))).toEqual([]);
    expect(w.slack.message(channel, asked.ts)?.reactions.map((r) => r.name)).toEqual(['white_check_mark']);
    expect(w.openai.malformed).toEqual([]);
  });

  it("Slack's retries of one event start one run and post one answer", async () => {
    const channel = w.newChannel();
    const url = w.statusUrl('retry');
    w.model.brain('retry', callThenAnswer('http_get', { url }, healthy));

    const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged('retry', 'is payments healthy?'));
    // Slack retries at once when it thinks the first delivery timed out, and again later.
    const early = await w.post(eventBody(asked.envelope), { retryNum: 1, retryReason: 'http_timeout' });
    expect(early.status).toBe(200);
    const run = await w.ended(asked.runId);
    // The job finishes just after the run's end is posted.
    const job = await w.waitFor('the start job to finish', async () => {
      const found = await w.queue.getJob(startJobId(asked.eventId));
      return found?.finishedOn ? found : undefined;
    });
    const late = await w.post(eventBody(asked.envelope), { retryNum: 2, retryReason: 'http_timeout' });
    expect(late.status).toBe(200);

    // A later question in the same channel, answered: the bot has handled the late retry by then.
    w.model.brain('retry-after', answerAtOnce('Still healthy.'));
    const after = await w.ask(channel, PEOPLE.requester, w.model.tagged('retry-after', 'and now?'));
    await w.ended(after.runId);

    expect(run.state.status).toBe('completed');
    expect(w.model.requestsOf('retry')).toHaveLength(2);
    expect(w.hits(url)).toHaveLength(1);
    const answers = w.slack
      .thread(channel, asked.threadTs)
      .filter((m) => wordsOf(m).includes('Payments is healthy'));
    expect(answers).toHaveLength(1);
    // The one start job is still the first delivery's: the retries added nothing.
    const again = await w.queue.getJob(startJobId(asked.eventId));
    expect(again?.timestamp).toBe(job?.timestamp);
    expect(again?.finishedOn).toBe(job?.finishedOn);
    expect((await w.store.runs.loadRun(asked.runId))?.answerTs).toBe(run.answerTs);
  });

  it('refuses forged and stale signatures: 401, nothing is queued, nothing runs', async () => {
    const channel = w.newChannel();
    w.model.brain('forged', answerAtOnce('This must never be answered.'));
    const envelopes = [0, 1, 2].map(() => {
      const question = w.slack.userMessage({
        channel,
        user: PEOPLE.requester,
        text: `<@${w.id.botUserId}> ${w.model.tagged('forged', 'delete everything')}`,
      });
      return eventEnvelope(
        w.id,
        appMentionEvent(w.id, { channel, user: PEOPLE.requester, text: question.text, ts: question.ts }),
      );
    });
    const [wrongSecret, stale, garbage] = envelopes as [
      (typeof envelopes)[0],
      (typeof envelopes)[0],
      (typeof envelopes)[0],
    ];
    const refused = await Promise.all([
      w.post(eventBody(wrongSecret), { secret: 'not-the-signing-secret' }),
      // Signed with the right secret, but six minutes ago (Slack's limit is five).
      w.post(eventBody(stale), { timestamp: nowSeconds() - 6 * 60 }),
      w.post(eventBody(garbage), { signature: 'v0=deadbeef' }),
      w.post(slashCommandBody(w.id, { user: PEOPLE.stranger, channel, text: 'status' }), {
        secret: 'not-the-signing-secret',
      }),
    ]);
    expect(refused.map((r) => r.status)).toEqual([401, 401, 401, 401]);

    // A genuine question in the same channel goes through and is answered: the refused ones had their chance.
    w.model.brain('genuine', answerAtOnce('Genuine question answered.'));
    const genuine = await w.ask(channel, PEOPLE.requester, w.model.tagged('genuine', 'hello?'));
    await w.ended(genuine.runId);

    expect(w.model.requestsOf('forged')).toEqual([]);
    for (const envelope of envelopes) {
      expect(await w.queue.getJob(startJobId(envelope.event_id))).toBeUndefined();
      expect(await w.store.runs.loadRun(runIdForEvent(envelope.event_id))).toBeNull();
      // Nothing was posted in the refused questions' threads, not even a reaction.
      const question = w.slack.message(channel, String(envelope.event.ts));
      expect(w.slack.thread(channel, String(envelope.event.ts)).filter((m) => m.bot_id)).toEqual([]);
      expect(question?.reactions).toEqual([]);
    }
    expect(w.slack.ephemerals(channel)).toEqual([]);
  });

  it('a reply in the thread continues the conversation: the model sees the earlier question and answer', async () => {
    const channel = w.newChannel();
    const firstAnswer = 'Payments runs version 1.4.2.';
    w.model.brain('first', answerAtOnce(firstAnswer));
    const asked = await w.ask(
      channel,
      PEOPLE.requester,
      w.model.tagged('first', 'which version of payments runs?'),
    );
    await w.ended(asked.runId);

    w.model.brain('follow-up', answerAtOnce('Version 1.4.2 was released on Tuesday.'));
    const followUp = await w.replyInThread(
      { channel, threadTs: asked.threadTs },
      PEOPLE.requester,
      w.model.tagged('follow-up', 'when was it released?'),
    );
    const run = await w.ended(followUp.runId);

    expect(followUp.runId).not.toBe(asked.runId);
    expect(run.state.status).toBe('completed');
    expect(run.slack.threadTs).toBe(asked.threadTs);
    // The model got the thread's history before the new question.
    const [request] = w.model.requestsOf('follow-up');
    const conversation = (request?.body.messages ?? [])
      .filter((m) => m.role === 'user' || m.role === 'assistant')
      .map((m) => [m.role, contentOf(m)]);
    expect(conversation).toEqual([
      ['user', expect.stringContaining('which version of payments runs?')],
      ['assistant', firstAnswer],
      ['user', expect.stringContaining('when was it released?')],
    ]);
    // Both answers, in order, in the one thread.
    const answers = w.slack
      .thread(channel, asked.threadTs)
      .filter((m) => m.bot_id && buttonOf(m, ACTION_IDS.details))
      .map((m) => wordsOf(m));
    expect(answers).toEqual([
      expect.stringContaining(firstAnswer),
      expect.stringContaining('released on Tuesday'),
    ]);
  });

  it("Details on an answer opens the run's trace: the tool, its arguments and its result", async () => {
    const channel = w.newChannel();
    const url = w.statusUrl('details');
    w.model.brain('details', callThenAnswer('http_get', { url }, healthy));
    const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged('details', 'is payments healthy?'));
    await w.ended(asked.runId);
    const answer = w.slack.thread(channel, asked.threadTs).find((m) => buttonOf(m, ACTION_IDS.details));
    expect(answer).toBeDefined();

    const triggerId = `${Date.now()}.details.${asked.runId}`;
    const res = await w.click(answer!, PEOPLE.stranger, ACTION_IDS.details, triggerId);
    expect(res.status).toBe(200);
    const opened = await w.viewOpened(triggerId);

    const view = opened.args.view as { callback_id?: string; blocks?: unknown[] };
    expect(view.callback_id).toBe(CALLBACK_IDS.trace);
    const words = wordsOf({ text: '', blocks: view.blocks ?? [] });
    expect(words).toContain('http_get');
    expect(words).toContain(url);
    expect(words).toContain('all systems operational');
    expect(words).toContain('Payments is healthy');
  });
});
