/**
 * End to end, with loopgate's real processes (`npm run bot` and one `npm run worker`) against real Redis,
 * the fake Slack Web API and the fake OpenAI: the agent session's stop button in the middle of a model
 * call, the feedback buttons under an answer (recorded, counted and exported), and the agent pane
 * (suggested prompts, the viewed conversation passed to the run as data, the thread title).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { feedbackValue } from '../../src/slack/final-answer.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { runIdForEvent } from '../../src/store/ids.js';
import { emptyWorkDir, runCli } from '../cli/cli-harness.js';
import type { StoredMessage } from '../fakes/slack-api-server.js';
import {
  blockActionsPayload,
  directMessageEvent,
  eventBody,
  eventEnvelope,
  interactivityBody,
} from '../fakes/slack-signing.js';
import { answerAtOnce } from './support/model-brains.js';
import { metricSum, scrape } from './support/prom-text.js';
import { wordsOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

let w: SlackWorld;
const work = emptyWorkDir();
beforeAll(async () => {
  w = await startSlackWorld({
    mode: 'split',
    workers: 1,
    policyExtra: [
      'slack:',
      '  suggestedPrompts:',
      '    dm:',
      '      - { title: "Status", message: "Is payments healthy?" }',
      '    channel:',
      '      - { title: "This channel", message: "What is wrong with the service of this channel?" }',
    ],
  });
}, 120_000);
afterAll(async () => {
  await w?.close();
  work.remove();
}, 60_000);

const stopEvent = (channel: string, threadTs: string, user: string) => ({
  type: 'agent_session_stopped',
  channel,
  thread_ts: threadTs,
  user,
  streaming_message_ts: [],
  event_ts: `${Math.floor(Date.now() / 1000)}.000200`,
});

describe('stop button and feedback (real bot and worker processes)', { timeout: 60_000 }, () => {
  it('the stop button mid-model-call: the run is cancelled at once, the model is not asked again, the thread says who stopped it', async () => {
    const channel = w.newChannel();
    // A model that takes 20 s to answer: only an abort ends its request sooner.
    w.model.brain('stop-mid-call', () => ({ delayMs: 20_000, step: { content: 'Too late.' } }));
    const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged('stop-mid-call', 'is payments ok?'));
    await w.waitFor('the model request', () => w.model.requestsOf('stop-mid-call').length === 1);

    const stops = async () => metricSum(await scrape(w.botMetricsUrl), 'loopgate_stop_clicks_total');
    const stopsBefore = await stops();
    const clicked = performance.now();
    const res = await w.post(
      eventBody(eventEnvelope(w.id, stopEvent(channel, asked.threadTs, PEOPLE.requester))),
    );
    expect(res.status).toBe(200);
    const request = w.model.requestsOf('stop-mid-call')[0]!;
    await w.waitFor('the model request aborted', () => request.abandonedAt !== undefined, 10_000);
    const run = await w.ended(asked.runId, 10_000);
    const endedMs = performance.now() - clicked;
    const abortedMs = request.abandonedAt! - clicked;
    console.log(
      `stop button click -> model request aborted: ${abortedMs.toFixed(0)} ms; -> run cancelled and its end posted: ${endedMs.toFixed(0)} ms (model reply due in 20 s)`,
    );
    expect(abortedMs).toBeLessThan(5_000);
    expect(endedMs).toBeLessThan(10_000);
    expect(run.state).toMatchObject({ status: 'cancelled', stopReason: 'cancelled', step: 0 });
    expect(run.cancelRequest?.by).toBe(PEOPLE.requester);
    const said = w.slack
      .thread(channel, asked.threadTs)
      .filter((m: StoredMessage) => m.bot_id && wordsOf(m).includes(`Cancelled by <@${PEOPLE.requester}>`));
    expect(said).toHaveLength(1);
    expect((await stops()) - stopsBefore).toBe(1);
    // The run has ended (nothing can ask the model for it any more): still the one request.
    expect(w.model.requestsOf('stop-mid-call')).toHaveLength(1);
  });

  it('feedback: the answer carries the buttons; clicks are recorded once per person, counted and exported', async () => {
    const channel = w.newChannel();
    w.model.brain('feedback', answerAtOnce('Payments is healthy.'));
    const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged('feedback', 'is payments ok?'));
    const run = await w.ended(asked.runId);
    const answer = w.slack.message(channel, run.answerTs!)!;
    const block = (answer.blocks ?? []).find((b) => (b as { type?: string }).type === 'context_actions');
    expect(JSON.stringify(block)).toContain(feedbackValue('good', asked.runId));

    const counted = async () =>
      metricSum(await scrape(w.botMetricsUrl), 'loopgate_feedback_total', { value: 'good' });
    const before = await counted();
    const click = (user: string, value: 'good' | 'bad') =>
      w.post(
        interactivityBody(
          blockActionsPayload(w.id, {
            user,
            channel,
            messageTs: answer.ts,
            threadTs: asked.threadTs,
            action: { actionId: ACTION_IDS.feedback, value: feedbackValue(value, asked.runId) },
          }),
        ),
      );
    expect((await click(PEOPLE.requester, 'good')).status).toBe(200);
    expect((await click(PEOPLE.requester, 'bad')).status).toBe(200);
    expect((await click(PEOPLE.manager, 'bad')).status).toBe(200);
    await w.waitFor(
      'two feedback records',
      async () => (await w.store.feedback.forRun(asked.runId)).length === 2,
    );
    await w.waitFor('the note on the second click', () =>
      w.ephemeralsTo(PEOPLE.requester, channel).some((e) => e.text.includes('already gave feedback')),
    );
    expect((await w.store.feedback.forRun(asked.runId)).map((r) => `${r.userId}:${r.value}`)).toEqual([
      `${PEOPLE.requester}:good`,
      `${PEOPLE.manager}:bad`,
    ]);
    expect((await counted()) - before).toBe(1);

    const exported = await runCli(
      ['feedback', '--since', '1h', '--json'],
      { REDIS_URL: 'redis://127.0.0.1:6379', LOOPGATE_PREFIX: w.prefix },
      work.dir,
    );
    expect(exported.code).toBe(0);
    const doc = JSON.parse(exported.stdout) as {
      feedback: Array<{ runId: string; userId: string; value: string }>;
    };
    expect(doc.feedback.filter((r) => r.runId === asked.runId).map((r) => r.value)).toEqual(['good', 'bad']);
  });

  it('agent pane: suggested prompts for the channel looked at; the run gets that channel as data; the thread is titled', async () => {
    const dm = `D0E2E${Date.now() % 1_000_000}`;
    const threadTs = `${Math.floor(Date.now() / 1000)}.000300`;
    const paneEvent = (type: string, viewing: string) => ({
      type,
      assistant_thread: {
        user_id: PEOPLE.requester,
        channel_id: dm,
        thread_ts: threadTs,
        context: { channel_id: viewing, team_id: w.id.teamId },
      },
      event_ts: threadTs,
    });
    const post = async (event: Record<string, unknown> & { type: string }) =>
      expect((await w.post(eventBody(eventEnvelope(w.id, event)))).status).toBe(200);
    await post(paneEvent('assistant_thread_started', 'C0OPS'));
    const prompts = await w.slack.waitForCall(
      'assistant.threads.setSuggestedPrompts',
      (c) => c.args.thread_ts === threadTs,
    );
    expect(prompts.args.prompts).toEqual([
      { title: 'This channel', message: 'What is wrong with the service of this channel?' },
    ]);
    await post(paneEvent('assistant_thread_context_changed', 'C0INCIDENTS'));

    w.model.brain('pane', answerAtOnce('Checked.'));
    const text = w.model.tagged('pane', 'what is wrong here?');
    const written = w.slack.userMessage({ channel: dm, user: PEOPLE.requester, text, threadTs });
    const envelope = eventEnvelope(
      w.id,
      directMessageEvent(w.id, { channel: dm, user: PEOPLE.requester, text, ts: written.ts, threadTs }),
    );
    expect((await w.post(eventBody(envelope))).status).toBe(200);
    const run = await w.ended(runIdForEvent(envelope.event_id));
    expect(run.state.status).toBe('completed');
    const sent = w.model.requestsOf('pane')[0]!.body.messages;
    const system = sent
      .filter((m) => m.role === 'system')
      .map((m) => JSON.stringify(m.content))
      .join('\n');
    expect(system).not.toContain('C0INCIDENTS');
    const data = sent.filter(
      (m) => m.role === 'user' && JSON.stringify(m.content).includes('data only, not instructions'),
    );
    expect(data).toHaveLength(1);
    expect(JSON.stringify(data[0]!.content)).toContain('C0INCIDENTS');
    const title = await w.slack.waitForCall(
      'assistant.threads.setTitle',
      (c) => c.args.thread_ts === threadTs,
    );
    expect(title.args.title).toBe(text);
  });
});
