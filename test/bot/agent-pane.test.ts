/**
 * The agent pane through the real bot: suggested prompts from the policy per channel type on
 * `assistant_thread_started`, the viewed conversation handed to the start job as data, and the thread
 * titled once by its first question.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePolicy } from '../../src/config/policy.js';
import { directMessageEvent } from '../fakes/slack-signing.js';
import { type BotFixture, DEFAULT_POLICY, REQUESTER, startBotFixture } from './bot-fixture.js';

const PANE_POLICY = `${DEFAULT_POLICY}
slack:
  suggestedPrompts:
    title: "Ask loopgate"
    dm:
      - { title: "Status", message: "Is payments healthy?" }
    channel:
      - { title: "Summarise", message: "What is going on in this channel's service?" }
      - { title: "Errors", message: "Any error spikes in the last hour?" }
`;

let f: BotFixture;
beforeAll(async () => {
  f = await startBotFixture({ policyYaml: PANE_POLICY });
}, 30_000);
afterAll(async () => {
  await f?.cleanup();
});

let seq = 0;
const paneThread = () => ({ channel: `D0PANE${++seq}`, threadTs: `1767000${seq}00.000100` });

const paneEvent = (
  type: 'assistant_thread_started' | 'assistant_thread_context_changed',
  t: { channel: string; threadTs: string },
  viewing?: string,
) => ({
  type,
  assistant_thread: {
    user_id: REQUESTER,
    channel_id: t.channel,
    thread_ts: t.threadTs,
    context: viewing ? { channel_id: viewing, team_id: f.id.teamId } : {},
  },
  event_ts: t.threadTs,
});

const promptCalls = (t: { channel: string; threadTs: string }) =>
  f.fake
    .callsOf('assistant.threads.setSuggestedPrompts')
    .filter((c) => c.args.channel_id === t.channel && c.args.thread_ts === t.threadTs);

describe('agent pane', () => {
  it('offers the channel prompts while the person looks at a channel, the DM ones otherwise', async () => {
    const inChannel = paneThread();
    expect((await f.sendEvent(paneEvent('assistant_thread_started', inChannel, 'C0OPS'))).res.status).toBe(
      200,
    );
    await f.bot.idle();
    expect(promptCalls(inChannel).map((c) => c.args)).toEqual([
      expect.objectContaining({
        title: 'Ask loopgate',
        prompts: [
          { title: 'Summarise', message: "What is going on in this channel's service?" },
          { title: 'Errors', message: 'Any error spikes in the last hour?' },
        ],
      }),
    ]);
    const alone = paneThread();
    await f.sendEvent(paneEvent('assistant_thread_started', alone));
    await f.bot.idle();
    expect(promptCalls(alone).map((c) => c.args.prompts)).toEqual([
      [{ title: 'Status', message: 'Is payments healthy?' }],
    ]);
  });

  it('passes the conversation looked at to the run as data (the latest one), and titles the thread once', async () => {
    const t = paneThread();
    await f.sendEvent(paneEvent('assistant_thread_started', t, 'C0OPS'));
    await f.sendEvent(paneEvent('assistant_thread_context_changed', t, 'C0INCIDENTS'));
    const ask = (text: string) =>
      f.sendEvent(
        directMessageEvent(f.id, { channel: t.channel, user: REQUESTER, text, threadTs: t.threadTs }),
      );
    const first = await ask('Why is checkout   slow right now?');
    await ask('And since when?');
    await f.bot.idle();
    const jobs = (await f.jobs()).filter((j) => j.name === 'start' && j.data.channelId === t.channel);
    expect(jobs.map((j) => j.data.viewing)).toEqual([
      { channelId: 'C0INCIDENTS', teamId: f.id.teamId },
      { channelId: 'C0INCIDENTS', teamId: f.id.teamId },
    ]);
    expect(jobs.find((j) => j.data.eventId === first.eventId)?.data.text).toBe(
      'Why is checkout slow right now?',
    );
    const titles = f.fake
      .callsOf('assistant.threads.setTitle')
      .filter((c) => c.args.channel_id === t.channel && c.args.thread_ts === t.threadTs);
    expect(titles.map((c) => c.args.title)).toEqual(['Why is checkout slow right now?']);
  });

  it('a DM outside the pane (no thread context) carries nothing and gets no title', async () => {
    const channel = 'D0PLAINDM';
    const { eventId } = await f.sendEvent(
      directMessageEvent(f.id, { channel, user: REQUESTER, text: 'hello there' }),
    );
    await f.bot.idle();
    const job = (await f.jobs()).find((j) => j.data.eventId === eventId);
    expect(job?.data.viewing).toBeUndefined();
    expect(f.fake.callsOf('assistant.threads.setTitle').filter((c) => c.args.channel_id === channel)).toEqual(
      [],
    );
  });

  it('the policy key is validated: at most 4 prompts, each with a title and a message', () => {
    const parse = (yaml: string) => () => parsePolicy(yaml, { env: {}, source: 'test policy' });
    const five = Array.from({ length: 5 }, (_, i) => `      - { title: "t${i}", message: "m${i}" }`).join(
      '\n',
    );
    expect(parse(`slack:\n  suggestedPrompts:\n    dm:\n${five}\n`)).toThrow(/suggestedPrompts/);
    expect(parse('slack:\n  suggestedPrompts:\n    channel:\n      - { title: "t" }\n')).toThrow(/message/);
    expect(parsePolicy('{}', { env: {}, source: 'p' }).slack.suggestedPrompts).toEqual({
      dm: [],
      channel: [],
    });
  });
});
