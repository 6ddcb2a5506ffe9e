import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBufferedFetch } from '../../src/http/buffered-fetch.js';
import type { RunState } from '../../src/loop/run-state.js';
import { createRun } from '../../src/loop/state.js';
import {
  AgentSurfaces,
  DRAFT_NOTE,
  sessionTitle,
  webSurfaceCalls,
} from '../../src/slack/surfaces/agent-surfaces.js';
import { createSlackWebClient } from '../../src/slack/web-client.js';
import { SurfaceMemory } from '../../src/store/threads/surface-memory.js';
import { type FakeSlack, startFakeSlack } from '../fakes/slack-api-server.js';
import { type StoreFixture, storeFixture } from '../store/redis-fixture.js';
import { recordingLogger } from './recording-logger.js';

const CHANNEL = 'C0SURFACE';
const THREAD = '1700000000.000200';
let fake: FakeSlack;
let fx: StoreFixture;

beforeEach(async () => {
  fake = await startFakeSlack({ agentSurfaces: {} });
  fx = storeFixture();
});
afterEach(async () => {
  await fake.close();
  await fx.cleanup();
});

function surfaces(logs = recordingLogger(), refusalTtlMs?: number, maxMessageChars?: number) {
  const client = createSlackWebClient({
    token: fake.token,
    apiUrl: fake.apiUrl,
    logger: logs,
    retries: 0,
    fetch: createBufferedFetch(),
  });
  const memory = new SurfaceMemory(fx.store.context);
  return {
    memory,
    logs,
    surfaces: new AgentSurfaces({
      calls: webSurfaceCalls(client),
      memory,
      logger: logs,
      writer: { minIntervalMs: 10, maxWaitMs: 20, ...(maxMessageChars ? { maxMessageChars } : {}) },
      ...(refusalTtlMs === undefined ? {} : { refusalTtlMs }),
    }),
  };
}

const ctx = (runId: string) => ({
  runId,
  teamId: fake.teamId,
  channelId: CHANNEL,
  threadTs: THREAD,
  requestMessageTs: THREAD,
});
const run = (runId: string, question = 'Is payments healthy?'): RunState =>
  createRun({
    runId,
    requester: { userId: 'U0ASKER01' },
    systemPrompt: 's',
    question,
    limits: {},
    now: Date.now(),
  });

async function until(check: () => boolean | Promise<boolean>, what: string) {
  const end = Date.now() + 5_000;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** `state` ended with `answer` accepted. */
const completed = (state: RunState, answer: string): RunState => ({
  ...state,
  status: 'completed',
  stopReason: 'completed',
  stopMessage: 'Completed.',
  answer: [answer],
});

describe('a run in the agent surfaces', () => {
  it('records a started stream, so the next job stops it with a note (or replaces it once Slack closed it)', async () => {
    const { surfaces: s, memory } = surfaces();
    const dead = (await s.forRun(ctx('run-a'), run('run-a'), recordingLogger()))!;
    dead.text('Payments is hea');
    await until(async () => (await memory.openStreams('run-a')).length === 1, 'the stream to be recorded');
    const [open] = await memory.openStreams('run-a');
    // The job dies here. Its successor:
    const next = (await s.forRun(ctx('run-a'), run('run-a'), recordingLogger()))!;
    await next.recover();
    const stream = fake.surfaces.streams.get(open!.ts)!;
    expect(stream.state).toBe('stopped');
    expect(fake.surfaces.textOf(stream)).toMatch(/^Payments is hea\n\n_Interrupted: this draft was cut off/);
    expect(await memory.openStreams('run-a')).toEqual([]);

    // A stream Slack closed already: its text is replaced by the note.
    fake.surfaces.options.streamLifetimeMs = 1;
    const other = (await s.forRun(ctx('run-b'), run('run-b'), recordingLogger()))!;
    other.text('Half an ans');
    await until(async () => (await memory.openStreams('run-b')).length === 1, 'the second stream');
    const [closed] = await memory.openStreams('run-b');
    await new Promise((r) => setTimeout(r, 10));
    await (await s.forRun(ctx('run-b'), run('run-b'), recordingLogger()))!.recover();
    expect(fake.message(CHANNEL, closed!.ts)?.text).toBe(
      '_Interrupted: this draft was cut off; the run continues below._',
    );
    expect(await memory.openStreams('run-b')).toEqual([]);
  });

  it('falls back on a refusal of setStatus, remembered for the workspace and logged once', async () => {
    fake.surfaces.options.refuse = 'missing_scope';
    const { surfaces: s, logs } = surfaces();
    const first = (await s.forRun(ctx('run-c'), run('run-c'), logs))!;
    await first.begin();
    expect(first.showing).toBe(false);
    expect(await s.forRun(ctx('run-d'), run('run-d'), logs)).toBeNull();
    // Another worker process meets the same refusal: still one log line.
    const { surfaces: again } = surfaces(logs);
    expect(await again.forRun(ctx('run-e'), run('run-e'), logs)).toBeNull();
    expect(logs.entries.filter((e) => e.msg?.startsWith('Slack refused agent surfaces'))).toHaveLength(1);
    expect(fake.callsOf('chat.startStream')).toEqual([]);
  });

  it('remembers a refusal for an hour by default, and tries the workspace again once it expired', async () => {
    fake.surfaces.options.refuse = 'not_allowed_token_type';
    const { redis, keys } = fx.store.context;
    const refusedKey = `${keys.prefix}:surfaces:refused:${fake.teamId}`;
    await (await surfaces().surfaces.forRun(ctx('run-h'), run('run-h'), recordingLogger()))!.begin();
    const ttl = await redis.pttl(refusedKey);
    expect(ttl).toBeGreaterThan(3_590_000);
    expect(ttl).toBeLessThanOrEqual(3_600_000);

    await redis.del(refusedKey);
    const { surfaces: short } = surfaces(recordingLogger(), 200);
    await (await short.forRun(ctx('run-i'), run('run-i'), recordingLogger()))!.begin();
    expect(await short.forRun(ctx('run-j'), run('run-j'), recordingLogger())).toBeNull();
    // The workspace enabled the methods meanwhile: once the refusal expired, runs show in them again.
    fake.surfaces.options.refuse = undefined;
    await until(async () => (await redis.exists(refusedKey)) === 0, 'the refusal to expire');
    const again = (await short.forRun(ctx('run-k'), run('run-k'), recordingLogger()))!;
    expect(again).not.toBeNull();
    await again.begin();
    expect(again.showing).toBe(true);
  });

  it('renames the session when a follow-up changes the subject, not when it goes on with it', async () => {
    const { surfaces: s } = surfaces();
    const first = (await s.forRun(ctx('run-g'), run('run-g', 'Is payments healthy?'), recordingLogger()))!;
    await first.begin();
    const followUp = (question: string, runId: string) =>
      createRun({
        runId,
        requester: { userId: 'U0ASKER01' },
        systemPrompt: 's',
        question,
        history: [
          { role: 'user', content: 'Is payments healthy?' },
          { role: 'assistant', content: 'Yes.' },
        ],
        limits: {},
        now: Date.now(),
      });
    await (await s.forRun(
      ctx('run-h'),
      followUp('and is payments latency fine too?', 'run-h'),
      recordingLogger(),
    ))!.begin();
    expect(fake.callsOf('agents.sessions.rename')).toEqual([]);
    await (await s.forRun(
      ctx('run-i'),
      followUp('Who is on call for search?', 'run-i'),
      recordingLogger(),
    ))!.begin();
    expect(fake.callsOf('agents.sessions.rename').map((c) => c.args.title)).toEqual([
      'Who is on call for search?',
    ]);
    expect(fake.surfaces.sessions.get(`${CHANNEL}:${THREAD}`)?.at(-1)).toMatchObject({
      status: 'processing',
      title: 'Who is on call for search?',
    });
  });

  it('marks a refused draft that rolled over into several messages as a draft in every one of them', async () => {
    const { surfaces: s, memory } = surfaces(recordingLogger(), undefined, 300);
    const state = run('run-d1', 'Restart payments');
    const surface = (await s.forRun(ctx('run-d1'), state, recordingLogger()))!;
    // The validator refuses this reply (the restart was rejected); the model then answers honestly.
    const draft = 'I restarted payments in prod and it is healthy again. '.repeat(15);
    for (let i = 0; i < draft.length; i += 40) {
      surface.text(draft.slice(i, i + 40));
      await new Promise((r) => setTimeout(r, 2));
    }
    await until(() => fake.surfaces.streamsIn(CHANNEL, THREAD).length >= 2, 'the draft to roll over');
    const answer = 'The restart was rejected by @lead; nothing was changed.';
    surface.text(answer);
    expect(await surface.finish(completed(state, answer))).toBeNull();
    const streams = fake.surfaces.streamsIn(CHANNEL, THREAD);
    expect(streams.length).toBeGreaterThan(2);
    for (const stream of streams) {
      expect(fake.message(CHANNEL, stream.ts)?.text.endsWith(DRAFT_NOTE), stream.ts).toBe(true);
    }
    expect(await memory.openStreams('run-d1')).toEqual([]);
  });

  it('marks a draft as a draft even when the run ended before its stream started', async () => {
    const { surfaces: s } = surfaces();
    const state = run('run-d2', 'Restart payments');
    const surface = (await s.forRun(ctx('run-d2'), state, recordingLogger()))!;
    surface.text('I restarted payments.');
    const answer = 'The restart was rejected; nothing was changed.';
    expect(await surface.finish(completed(state, answer))).toBeNull();
    const streams = fake.surfaces.streamsIn(CHANNEL, THREAD);
    expect(streams.map((x) => fake.message(CHANNEL, x.ts)?.text)).toEqual([
      `I restarted payments.${DRAFT_NOTE}`,
    ]);
  });

  it('shows no surfaces for a sub-agent run, and titles sessions from the question', async () => {
    const { surfaces: s } = surfaces();
    const child = {
      ...run('run-f'),
      agent: { name: 'triage', parentRunId: 'run-x', parentToolCallId: 'c1', depth: 1 },
    } as RunState;
    expect(await s.forRun(ctx('run-f'), child, recordingLogger())).toBeNull();
    expect(sessionTitle('<@U0BOT> is payments healthy?\nmore')).toBe('is payments healthy?');
    expect(sessionTitle('x'.repeat(100))).toHaveLength(60);
  });
});
