import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBufferedFetch } from '../../src/http/buffered-fetch.js';
import { neutraliseAnswer } from '../../src/slack/neutralise.js';
import { webSurfaceCalls } from '../../src/slack/surfaces/agent-surfaces.js';
import {
  type StreamCalls,
  StreamWriter,
  type StreamWriterOptions,
} from '../../src/slack/surfaces/stream-writer.js';
import { createSlackWebClient } from '../../src/slack/web-client.js';
import type { AgentSurfaceOptions } from '../fakes/slack-agent-surfaces.js';
import { type FakeSlack, startFakeSlack } from '../fakes/slack-api-server.js';
import { pagesOrDisguises, splitText } from '../support/slack-text.js';
import { recordingLogger } from './recording-logger.js';

const CHANNEL = 'C0STREAM1';
const THREAD = '1700000000.000100';
let fake: FakeSlack;

async function setUp(surfaces: AgentSurfaceOptions = {}) {
  fake = await startFakeSlack({ agentSurfaces: surfaces });
}
afterEach(async () => {
  await fake?.close();
});

function writer(opts: Partial<StreamWriterOptions> = {}) {
  const logger = recordingLogger();
  const client = createSlackWebClient({
    token: fake.token,
    apiUrl: fake.apiUrl,
    logger,
    retries: 0,
    timeoutMs: 5_000,
    fetch: createBufferedFetch(),
  });
  const opened: string[] = [];
  const stopped: string[] = [];
  const w = new StreamWriter({
    calls: webSurfaceCalls(client),
    channel: CHANNEL,
    threadTs: THREAD,
    recipient: { userId: 'U0ASKER01', teamId: fake.teamId },
    logger,
    minIntervalMs: 20,
    maxWaitMs: 40,
    bufferChars: 64,
    onStarted: async (ts) => {
      opened.push(ts);
    },
    onStopped: async (ts) => {
      stopped.push(ts);
    },
    ...opts,
  });
  return { w, opened, stopped, logger };
}

async function until(check: () => boolean, what: string, ms = 5_000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Feeds `text` in pieces of `size`, `gapMs` apart, like a model's deltas. */
async function feed(w: StreamWriter, text: string, size = 4, gapMs = 0) {
  for (let i = 0; i < text.length; i += size) {
    w.text(text.slice(i, i + size));
    if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
  }
}

const streamedText = () =>
  fake.surfaces
    .streamsIn(CHANNEL, THREAD)
    .map((s) => fake.surfaces.textOf(s))
    .join('');

describe('StreamWriter over the fake Slack Web API', () => {
  beforeEach(async () => {
    await setUp();
  });

  it('sends the first words at once, then batches: the chunks concatenated are the text', async () => {
    const { w, opened, stopped } = writer();
    const text = 'Payments is healthy. '.repeat(30);
    w.text(text.slice(0, 4));
    await fake.waitForCall('chat.startStream');
    await feed(w, text.slice(4), 4, 1);
    const messages = await w.stop();
    expect(streamedText()).toBe(text);
    expect(messages.map((m) => m.text).join('')).toBe(text);
    const deltas = Math.ceil(text.length / 4);
    const calls = fake.callsOf('chat.appendStream').length + fake.callsOf('chat.startStream').length;
    expect(calls).toBeLessThan(deltas / 4);
    expect(fake.surfaces.streamsIn(CHANNEL, THREAD).every((s) => s.state === 'stopped')).toBe(true);
    expect(opened).toEqual(stopped);
    const start = fake.callsOf('chat.startStream')[0]!;
    expect(start.args).toMatchObject({
      thread_ts: THREAD,
      recipient_user_id: 'U0ASKER01',
      task_display_mode: 'timeline',
    });
  });

  it('keeps text and timeline steps in order, a step updated in place while it waits', async () => {
    const { w } = writer({ minIntervalMs: 200 });
    w.text('Checking.');
    await fake.waitForCall('chat.startStream');
    w.task({ type: 'task_update', id: 't1', title: 'GET status.internal/payments', status: 'in_progress' });
    w.task({
      type: 'task_update',
      id: 't1',
      title: 'GET status.internal/payments',
      status: 'complete',
      output: 'done',
    });
    w.text(' All good.');
    await w.stop();
    const [stream] = fake.surfaces.streamsIn(CHANNEL, THREAD);
    expect(stream?.chunks.map((c) => (c.type === 'task_update' ? `${c.id}:${c.status}` : c.text))).toEqual([
      'Checking.',
      't1:complete',
      ' All good.',
    ]);
  });

  it('rolls over to a continuation message before the size cap, losing nothing', async () => {
    const { w, opened } = writer({ maxMessageChars: 1_000 });
    const text = Array.from({ length: 200 }, (_, i) => `line ${i} of the answer\n`).join('');
    await feed(w, text, 50);
    await w.stop();
    expect(opened.length).toBeGreaterThanOrEqual(Math.ceil(text.length / 1_000));
    for (const s of fake.surfaces.streamsIn(CHANNEL, THREAD)) {
      expect(fake.surfaces.textOf(s).length).toBeLessThanOrEqual(1_000);
      expect(s.state).toBe('stopped');
    }
    expect(streamedText()).toBe(text);
  });

  it('rolls over by age before Slack closes the stream', async () => {
    const { w, opened } = writer({ maxStreamAgeMs: 150 });
    await feed(w, 'x'.repeat(400), 10, 10);
    await w.stop();
    expect(opened.length).toBeGreaterThan(1);
    expect(fake.callsOf('chat.appendStream').every((c) => c.response?.ok === true)).toBe(true);
    expect(streamedText()).toBe('x'.repeat(400));
  });
});

describe('StreamWriter when Slack ends a stream or a message first', () => {
  it('continues in a new message when the stream expired (message_not_in_streaming_state)', async () => {
    await setUp({ streamLifetimeMs: 100 });
    const { w, opened } = writer();
    await feed(w, 'y'.repeat(600), 10, 8);
    await w.stop();
    const refused = fake
      .callsOf('chat.appendStream')
      .filter((c) => c.response?.error === 'message_not_in_streaming_state');
    expect(refused.length).toBeGreaterThan(0);
    expect(opened.length).toBeGreaterThan(1);
    expect(streamedText()).toBe('y'.repeat(600));
  });

  it('continues in a new message on msg_too_long, keeping continuations smaller', async () => {
    await setUp({ maxMessageChars: 500 });
    const { w } = writer({ maxMessageChars: 10_000 });
    const text = 'z'.repeat(1_800);
    await feed(w, text, 100);
    await w.stop();
    expect(fake.calls.some((c) => c.response?.error === 'msg_too_long')).toBe(true);
    expect(streamedText()).toBe(text);
  });

  it('gives up as refused on a workspace without the feature, and says with which code', async () => {
    await setUp({ refuse: 'not_allowed_token_type' });
    const gaveUp: string[] = [];
    const { w } = writer({ onGaveUp: (s) => gaveUp.push(s) });
    w.text('hello');
    await until(() => w.state !== 'open', 'the refusal');
    expect(w.state).toBe('refused');
    expect(w.refusal).toBe('not_allowed_token_type');
    expect(gaveUp).toEqual(['refused']);
    expect(w.started).toBe(false);
  });

  it('never lets a broadcast through, even split across batches', async () => {
    await setUp();
    const { w } = writer({ bufferChars: 1, minIntervalMs: 1, maxWaitMs: 1 });
    w.text('Heads up ');
    await fake.waitForCall('chat.startStream');
    for (const piece of ['<!', 'chan', 'nel', '> now']) {
      w.text(piece);
      await new Promise((r) => setTimeout(r, 15));
    }
    await w.stop();
    expect(streamedText()).toBe('Heads up @channel now');
  });

  it('neutralises a broadcast whose label outlasts a batch, and one split by a timeline step', async () => {
    await setUp();
    const { w } = writer({ bufferChars: 1, minIntervalMs: 1, maxWaitMs: 1 });
    const label = 'please read this right now, it is important'.repeat(2);
    w.text(`Heads up <!channel|${label}`);
    await w.flush();
    w.text('> and <!subteam^S0SRE|');
    await w.flush();
    w.task({ type: 'task_update', id: 't1', title: 'GET status', status: 'complete' });
    w.text('@sre> see <https://evil.example|');
    await w.flush();
    w.text('https://status.example>, ask <@U0ALICE>');
    await w.stop();
    expect(streamedText()).toBe(
      `Heads up @channel and @sre see https://status.example (https://evil.example), ask <@U0ALICE>`,
    );
  });
});

describe('the fake checks the stream methods as Slack documents them', () => {
  beforeEach(async () => {
    await setUp();
  });

  async function call(method: string, args: Record<string, unknown>) {
    const res = await fetch(`${fake.apiUrl}${method}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fake.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(args),
    });
    return (await res.json()) as { ok: boolean; error?: string; ts?: string };
  }

  it('refuses a start without thread_ts or recipient, bad chunks, and an append after stop', async () => {
    expect(await call('chat.startStream', { channel: CHANNEL, markdown_text: 'hi' })).toMatchObject({
      ok: false,
      error: 'invalid_arguments',
    });
    expect(
      await call('chat.startStream', { channel: CHANNEL, thread_ts: THREAD, markdown_text: 'hi' }),
    ).toMatchObject({
      ok: false,
    });
    const base = { channel: CHANNEL, thread_ts: THREAD, recipient_user_id: 'U1', recipient_team_id: 'T1' };
    expect(
      await call('chat.startStream', {
        ...base,
        chunks: [{ type: 'task_update', id: 'a', title: 't', status: 'done' }],
      }),
    ).toMatchObject({
      ok: false,
      error: 'invalid_chunks',
    });
    expect(await call('chat.startStream', base)).toMatchObject({ ok: false, error: 'invalid_arguments' });
    const started = await call('chat.startStream', { ...base, markdown_text: 'hi' });
    expect(started.ok).toBe(true);
    const ts = started.ts!;
    expect(
      await call('chat.appendStream', { channel: CHANNEL, ts, markdown_text: 'x'.repeat(12_001) }),
    ).toMatchObject({
      ok: false,
      error: 'msg_too_long',
    });
    expect(await call('chat.stopStream', { channel: CHANNEL, ts })).toMatchObject({ ok: true });
    expect(await call('chat.appendStream', { channel: CHANNEL, ts, markdown_text: 'late' })).toMatchObject({
      ok: false,
      error: 'message_not_in_streaming_state',
    });
    // A DM needs no recipient.
    expect(
      await call('chat.startStream', { channel: 'D0DM00001', thread_ts: THREAD, markdown_text: 'hi' }),
    ).toMatchObject({ ok: true });
  });

  it('records each session status and refuses unknown ones', async () => {
    const session = { channel_id: CHANNEL, thread_ts: THREAD };
    expect(await call('agents.sessions.setStatus', { ...session, status: 'thinking' })).toMatchObject({
      ok: false,
    });
    for (const status of ['processing', 'suspended', 'processing', 'active']) {
      expect(
        await call('agents.sessions.setStatus', { ...session, status, title: 'Payments?' }),
      ).toMatchObject({ ok: true });
    }
    expect(fake.surfaces.statusHistory(CHANNEL, THREAD)).toEqual([
      'processing',
      'suspended',
      'processing',
      'active',
    ]);
    expect(fake.surfaces.sessions.get(`${CHANNEL}:${THREAD}`)?.[0]?.title).toBe('Payments?');
  });
});

/** Stream methods kept in memory: each message's markdown text, in order. */
function memoryCalls(): { calls: StreamCalls; texts: string[] } {
  const texts: string[] = [];
  const take = (ts: string, chunks: { type: string; text?: string }[]) => {
    for (const c of chunks) if (c.type === 'markdown_text') texts[Number(ts)] += c.text ?? '';
  };
  return {
    texts,
    calls: {
      async start({ chunks }) {
        texts.push('');
        const ts = String(texts.length - 1);
        take(ts, chunks);
        return { ts };
      },
      async append({ ts, chunks }) {
        take(ts, chunks);
      },
      async stop({ ts, chunks }) {
        take(ts, chunks ?? []);
      },
    },
  };
}

describe('StreamWriter neutralisation (property)', () => {
  it('streams, for any split of any text into batches, exactly the whole text neutralised', async () => {
    await setUp(); // only so the shared afterEach has a server to close
    await fc.assert(
      fc.asyncProperty(splitText, fc.integer({ min: 200, max: 3_000 }), async ({ text, pieces }, cap) => {
        const { calls, texts } = memoryCalls();
        const w = new StreamWriter({
          calls,
          channel: CHANNEL,
          threadTs: THREAD,
          logger: recordingLogger(),
          minIntervalMs: 60_000,
          maxMessageChars: cap,
        });
        for (const piece of pieces) {
          w.text(piece);
          await w.flush();
        }
        await w.stop();
        expect(texts.join('')).toBe(neutraliseAnswer(text));
        for (const message of texts) expect(pagesOrDisguises(message)).toBe(false);
      }),
      { numRuns: 150 },
    );
  });
});
