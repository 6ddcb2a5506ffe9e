/**
 * End to end, with loopgate's real processes (`npm run bot` and two `npm run worker`, SLACK_AGENT_SURFACES
 * =auto) against real Redis, the fake Slack Web API (its stream and session methods checked as Slack
 * documents them) and the fake OpenAI streaming its replies: a streamed answer, a two-tool timeline, a
 * pause and its resume, a stream that outlives Slack's lifetime, a worker killed mid-stream, and a
 * workspace that refuses the methods.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTION_IDS } from '../../src/slack/ids.js';
import type { FakeReply } from '../fakes/openai-server.js';
import type { FakeStream } from '../fakes/slack-agent-surfaces.js';
import { askToDeploy, DEPLOYED } from './support/deploy-case.js';
import { type Brain, callThenAnswer, succeeded } from './support/model-brains.js';
import { buttonOf, wordsOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

let w: SlackWorld;
beforeAll(async () => {
  w = await startSlackWorld({
    mode: 'split',
    workers: 2,
    agentSurfaces: {},
    // These tests are about streams, not Slack's pace: budgets that never run out of starts or statuses
    // (the fake here enforces no limit; test/slack/stream-degrade.test.ts covers a scarce Tier 2).
    policyExtra: [
      'slack:',
      '  rateLimits: { tier2PerMinute: 6000, tier3PerMinute: 6000, tier4PerMinute: 6000 }',
    ],
  });
}, 120_000);
afterAll(async () => {
  await w?.close();
}, 60_000);

const ANSWER =
  'Payments is healthy.\n\n- p99 latency: 120 ms\n- error rate: 0.1 %\n\nNothing to do; I will keep an eye on it.';

/** A reply streamed in small pieces, `delayMs` apart. */
const streamed = (content: string, delayMs = 3, chunkChars = 3): FakeReply => ({
  content,
  stream: { chunkChars, delayMs },
});

const streamsOf = (channel: string, threadTs: string) => w.slack.surfaces.streamsIn(channel, threadTs);
const textOf = (s: FakeStream) => w.slack.surfaces.textOf(s);
const tasksOf = (s: FakeStream) => s.chunks.filter((c) => c.type === 'task_update');

describe('agent surfaces through the real bot and worker processes', { timeout: 90_000 }, () => {
  it('streams the answer: the chunks concatenated are the final text, and that message is the answer', async () => {
    const channel = w.newChannel();
    w.model.brain('stream', () => streamed(ANSWER));
    const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged('stream', 'is payments healthy?'));
    const run = await w.ended(asked.runId);

    expect(run.state.status).toBe('completed');
    expect(w.model.requestsOf('stream')[0]?.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
    });
    const streams = streamsOf(channel, asked.threadTs);
    expect(streams).toHaveLength(1);
    const [stream] = streams as [FakeStream];
    expect(stream.state).toBe('stopped');
    expect(textOf(stream)).toBe(ANSWER);
    expect(stream.recipient).toEqual({ user: PEOPLE.requester, team: w.slack.teamId });
    // Fewer calls than the model's pieces: batched.
    const calls = w.slack.calls.filter(
      (c) => c.method.endsWith('Stream') && (c.args.ts === stream.ts || c.response?.ts === stream.ts),
    );
    expect(calls.length).toBeLessThan(Math.ceil(ANSWER.length / 3));
    // The stream is the answer: no second copy, the Details button on it, its ts recorded.
    const thread = w.slack.thread(channel, asked.threadTs);
    expect(thread.filter((m) => wordsOf(m).includes('Payments is healthy'))).toHaveLength(1);
    const message = w.slack.message(channel, stream.ts)!;
    expect(buttonOf(message, ACTION_IDS.details)?.value).toBe(asked.runId);
    expect(run.answerTs).toBe(stream.ts);
    expect(thread.filter((m) => m.text.startsWith(':hourglass'))).toEqual([]);
    expect(w.slack.surfaces.statusHistory(channel, asked.threadTs)).toEqual(['processing', 'active']);
    expect(w.slack.surfaces.sessions.get(`${channel}:${asked.threadTs}`)?.[0]).toMatchObject({
      title: 'is payments healthy? [case:stream]',
      initiator: PEOPLE.requester,
    });
    // Usage counted from the streamed reply, as from a whole one.
    expect(run.state.usage.inputTokens).toBeGreaterThan(0);
    expect(run.state.usage.outputTokens).toBeGreaterThan(0);
    expect(w.openai.malformed).toEqual([]);
  });

  it('shows a two-tool run as a timeline: both steps in order, with their outcomes, then the answer', async () => {
    const channel = w.newChannel();
    const first = w.statusUrl('timeline-a');
    const second = w.statusUrl('fail-twice-timeline-b');
    const brain: Brain = ({ toolResults }) => {
      if (toolResults.length === 0)
        return { toolCalls: [{ name: 'http_get', arguments: JSON.stringify({ url: first }) }] };
      if (toolResults.length === 1) {
        return { toolCalls: [{ name: 'http_get', arguments: JSON.stringify({ url: second }) }] };
      }
      return streamed(
        `Checked both: ${toolResults.map((r) => (succeeded(r) ? 'ok' : 'failed')).join(', ')}.`,
      );
    };
    w.model.brain('timeline', brain);
    const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged('timeline', 'check a and b'));
    const run = await w.ended(asked.runId);
    expect(run.state.status).toBe('completed');

    const [stream] = streamsOf(channel, asked.threadTs) as [FakeStream];
    const steps = tasksOf(stream).map((c) => [c.id, c.status]);
    const ids = [...new Set(steps.map(([id]) => id))];
    expect(ids).toHaveLength(2);
    // Each step starts before it ends, the first ends before the second starts.
    const lastOf = (id: unknown) => steps.filter(([i]) => i === id).at(-1)?.[1];
    expect(steps.findIndex(([id]) => id === ids[1])).toBeGreaterThan(
      steps.findIndex(([id, s]) => id === ids[0] && s !== 'in_progress'),
    );
    const answer = run.state.answer?.join('\n\n') ?? '';
    const outcomes = answer
      .replace(/^Checked both: /, '')
      .replace(/\.$/, '')
      .split(', ');
    expect([lastOf(ids[0]), lastOf(ids[1])]).toEqual(
      outcomes.map((o) => (o === 'ok' ? 'complete' : 'error')),
    );
    const titles = tasksOf(stream).map((c) => String(c.title));
    expect(titles).toContain(`GET ${new URL(first).host}${new URL(first).pathname}`);
    expect(tasksOf(stream).find((c) => c.id === ids[0])?.sources).toEqual([
      { type: 'url', url: first, text: `${new URL(first).host}${new URL(first).pathname}` },
    ]);
    // The markdown of the stream is exactly the answer: it is the answer.
    expect(textOf(stream)).toBe(answer);
    expect(run.answerTs).toBe(stream.ts);
  });

  it('a stream that is not exactly the answer is marked a draft, and the answer is posted below it', async () => {
    const channel = w.newChannel();
    const url = w.statusUrl('draft');
    w.model.brain('draft', ({ toolResults }) =>
      toolResults.length === 0
        ? {
            ...streamed('Let me look at the status page first.'),
            toolCalls: [{ name: 'http_get', arguments: JSON.stringify({ url }) }],
          }
        : streamed('Payments is healthy.'),
    );
    const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged('draft', 'is payments healthy?'));
    const run = await w.ended(asked.runId);
    expect(run.state.status).toBe('completed');
    const [stream] = streamsOf(channel, asked.threadTs) as [FakeStream];
    expect(stream.state).toBe('stopped');
    expect(textOf(stream)).toBe('Let me look at the status page first.Payments is healthy.');
    const message = w.slack.message(channel, stream.ts)!;
    // The note is added once the stream stopped (so a roll-over cannot split it or leave a message out).
    expect(message.text).toBe(
      'Let me look at the status page first.Payments is healthy.\n\n_Draft: superseded by the answer below._',
    );
    expect(buttonOf(message, ACTION_IDS.details)).toBeUndefined();
    // The answer, posted as without surfaces, after the draft.
    expect(run.answerTs).not.toBe(stream.ts);
    const posted = w.slack.message(channel, run.answerTs!)!;
    expect(wordsOf(posted)).toContain('Payments is healthy.');
    expect(Number(posted.ts)).toBeGreaterThan(Number(stream.ts));
    expect(w.slack.surfaces.statusHistory(channel, asked.threadTs)).toEqual(['processing', 'active']);
  });

  it('pauses: the stream stops before the card, the session is suspended; the resume opens a new stream', async () => {
    const c = await askToDeploy(w, 'surfaces-pause');
    const { channel, threadTs } = c.asked;
    const cardCall = w.slack
      .callsOf('chat.postMessage')
      .find((call) => call.args.thread_ts === threadTs && call.response?.ts === c.card.ts);
    const before = streamsOf(channel, threadTs);
    expect(before).toHaveLength(1);
    expect(before[0]?.state).toBe('stopped');
    expect(tasksOf(before[0]!).at(-1)).toMatchObject({ status: 'pending' });
    const stopped = w.slack.calls.find(
      (call) => call.method === 'chat.stopStream' && call.args.ts === before[0]?.ts,
    );
    expect(stopped && cardCall && stopped.at <= cardCall.at).toBe(true);
    await w.waitFor(
      'the session to be suspended',
      () => w.slack.surfaces.statusHistory(channel, threadTs).at(-1) === 'suspended',
    );

    await w.click(w.message(c.card), PEOPLE.manager, ACTION_IDS.approve);
    const run = await w.ended(c.asked.runId);
    expect(run.state.status).toBe('completed');
    const after = streamsOf(channel, threadTs);
    expect(after).toHaveLength(2);
    expect(after[1]?.state).toBe('stopped');
    expect(textOf(after[1]!)).toBe(DEPLOYED);
    expect(tasksOf(after[1]!).at(-1)).toMatchObject({ status: 'complete' });
    expect(w.slack.surfaces.statusHistory(channel, threadTs)).toEqual([
      'processing',
      'suspended',
      'processing',
      'active',
    ]);
    // The write happened once, through the card.
    expect(w.hits(c.url)).toHaveLength(1);
  });

  it('rolls over a stream that outlives Slack’s lifetime: continuation messages, nothing lost', async () => {
    w.slack.surfaces.options.streamLifetimeMs = 700;
    try {
      const channel = w.newChannel();
      const long = Array.from({ length: 30 }, (_, i) => `Line ${i + 1} of a long investigation.`).join('\n');
      w.model.brain('lifetime', () => streamed(long, 8, 4));
      const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged('lifetime', 'tell me everything'));
      const run = await w.ended(asked.runId);
      expect(run.state.status).toBe('completed');
      const streams = streamsOf(channel, asked.threadTs);
      expect(streams.length).toBeGreaterThan(1);
      expect(streams.map(textOf).join('')).toBe(long);
      expect(
        w.slack
          .callsOf('chat.appendStream')
          .some((call) => call.response?.error === 'message_not_in_streaming_state'),
      ).toBe(true);
      expect(run.answerTs).toBe(streams[0]?.ts);
      expect(buttonOf(w.slack.message(channel, streams.at(-1)!.ts)!, ACTION_IDS.details)).toBeDefined();
    } finally {
      w.slack.surfaces.options.streamLifetimeMs = undefined;
    }
  });

  it('a worker killed mid-stream: its successor marks the stream cut off and streams the answer anew', async () => {
    const channel = w.newChannel();
    let asked = 0;
    w.model.brain('killed', () => {
      asked++;
      // The first reply streams slowly (the worker dies during it); the successor's comes at once.
      return asked === 1 ? streamed(ANSWER, 150, 2) : streamed(ANSWER);
    });
    const question = await w.ask(channel, PEOPLE.requester, w.model.tagged('killed', 'is payments healthy?'));
    const first = await w.waitFor('the first stream to carry some words', () => {
      const s = streamsOf(channel, question.threadTs)[0];
      return s && textOf(s).length >= 4 ? s : undefined;
    });
    const worker = await w.waitFor('the worker holding the run', () =>
      w.processes.find((p) => p.entry === 'worker' && p.logs().some((l) => l.runId === question.runId)),
    );
    worker.kill('SIGKILL');
    const run = await w.ended(question.runId, 60_000);
    expect(run.state.status).toBe('completed');

    const streams = streamsOf(channel, question.threadTs);
    expect(streams[0]?.ts).toBe(first.ts);
    // Never a half answer that looks complete: the cut-off stream says so.
    expect(textOf(streams[0]!)).toMatch(/Interrupted: this draft was cut off/);
    expect(streams[0]?.state).toBe('stopped');
    const answerStream = streams.at(-1)!;
    expect(textOf(answerStream)).toBe(ANSWER);
    expect(run.answerTs).toBe(answerStream.ts);
  });
});

describe('a workspace that refuses agent surfaces', { timeout: 90_000 }, () => {
  it('gets the placeholder message and the posted answer; the refusal is remembered and logged once', async () => {
    w.slack.surfaces.options.refuse = 'not_allowed_token_type';
    const runs: {
      asked: Awaited<ReturnType<SlackWorld['ask']>>;
      run: Awaited<ReturnType<SlackWorld['ended']>>;
      channel: string;
    }[] = [];
    for (const tag of ['refused-1', 'refused-2']) {
      const channel = w.newChannel();
      w.model.brain(
        tag,
        callThenAnswer('http_get', { url: w.statusUrl(tag) }, () => `Answer for ${tag}.`),
      );
      const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged(tag, 'is payments healthy?'));
      const run = await w.ended(asked.runId);
      runs.push({ asked, run, channel });
    }
    for (const { asked, run, channel } of runs) {
      expect(run.state.status).toBe('completed');
      const thread = w.slack.thread(channel, asked.threadTs);
      const answers = thread.filter((m) => wordsOf(m).includes('Answer for'));
      expect(answers).toHaveLength(1);
      expect(run.answerTs).toBe(answers[0]?.ts);
      expect(streamsOf(channel, asked.threadTs)).toEqual([]);
      // The placeholder showed progress (and was removed with the answer).
      expect(
        w.slack
          .callsOf('chat.postMessage')
          .some((c) => c.args.thread_ts === asked.threadTs && String(c.args.text).startsWith(':hourglass')),
      ).toBe(true);
    }
    // The second run did not even try: the workspace's refusal was remembered.
    const tried = w.slack.calls.filter(
      (c) => c.response?.error === 'not_allowed_token_type' && c.args.thread_ts === runs[1]?.asked.threadTs,
    );
    expect(tried).toEqual([]);
    const logged = w.processes
      .flatMap((p) => p.logs())
      .filter((l) => String(l.msg).startsWith('Slack refused agent surfaces'));
    expect(logged).toHaveLength(1);
  });
});
