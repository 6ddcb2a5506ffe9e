/**
 * End to end, with the real bot and worker processes and SLACK_AGENT_SURFACES=auto: the agent session's
 * stop button while the model's reply is streaming into the thread. Slack stops the message's stream
 * itself on the click (and names it in `streaming_message_ts`); loopgate must cancel the run at once,
 * never ask the model again, close the session and leave no partial reply that looks like the answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredMessage } from '../fakes/slack-api-server.js';
import { eventBody, eventEnvelope } from '../fakes/slack-signing.js';
import { wordsOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

let w: SlackWorld;
beforeAll(async () => {
  w = await startSlackWorld({ mode: 'split', workers: 1, agentSurfaces: {} });
}, 120_000);
afterAll(async () => {
  await w?.close();
}, 60_000);

const PARTIAL = 'Looking at the payments dashboard: the error rate rose at 02:10 and then ';

describe('the stop button while the answer streams', { timeout: 60_000 }, () => {
  it('cancels the run, closes the session and leaves no partial reply posing as the answer', async () => {
    const channel = w.newChannel();
    // 4 characters every 400 ms: the reply would take about a minute to stream in full.
    w.model.brain('stop-streaming', () => ({
      content: `${PARTIAL}${'and so on '.repeat(60)}`,
      stream: { chunkChars: 4, delayMs: 400 },
    }));
    const asked = await w.ask(
      channel,
      PEOPLE.requester,
      w.model.tagged('stop-streaming', 'why did payments fail?'),
    );
    const stream = await w.waitFor('the reply streaming into the thread', () => {
      const [first] = w.slack.surfaces.streamsIn(channel, asked.threadTs);
      return first && w.slack.surfaces.textOf(first).length > 0 ? first : undefined;
    });
    expect(w.slack.surfaces.statusHistory(channel, asked.threadTs).at(-1)).toBe('processing');

    // Slack stops the streams of the session itself when the button is pressed.
    stream.state = 'stopped';
    const res = await w.post(
      eventBody(
        eventEnvelope(w.id, {
          type: 'agent_session_stopped',
          channel,
          thread_ts: asked.threadTs,
          user: PEOPLE.requester,
          streaming_message_ts: [stream.ts],
          event_ts: `${Math.floor(Date.now() / 1000)}.000300`,
        }),
      ),
    );
    expect(res.status).toBe(200);
    const run = await w.ended(asked.runId, 15_000);
    expect(run.state).toMatchObject({ status: 'cancelled', stopReason: 'cancelled' });
    expect(w.model.requestsOf('stop-streaming')).toHaveLength(1);
    await w.waitFor(
      'the session closed',
      () => w.slack.surfaces.statusHistory(channel, asked.threadTs).at(-1) === 'closed',
    );

    const thread = w.slack.thread(channel, asked.threadTs).filter((m: StoredMessage) => m.bot_id);
    expect(thread.filter((m) => wordsOf(m).includes(`Cancelled by <@${PEOPLE.requester}>`))).toHaveLength(1);
    // The answer recorded for the run is not the streamed fragment.
    expect(run.answerTs).not.toBe(stream.ts);
    // What had streamed stays, marked in place as cut short; nothing streamed after the click.
    const shown = w.slack.surfaces.textOf(stream);
    const fragment = await w.waitFor('the fragment marked cut short', () => {
      const m = w.slack.message(channel, stream.ts);
      return m && wordsOf(m).includes('Cut short') ? m : undefined;
    });
    expect(wordsOf(fragment).startsWith(shown)).toBe(true);
    expect(PARTIAL.startsWith(shown.trim())).toBe(true);
    expect(w.slack.surfaces.streamsIn(channel, asked.threadTs)).toHaveLength(1);
  });
});
