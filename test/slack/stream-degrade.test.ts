import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBufferedFetch } from '../../src/http/buffered-fetch.js';
import type { RunState } from '../../src/loop/run-state.js';
import { createRun } from '../../src/loop/state.js';
import { SlackNotifier } from '../../src/slack/notifier.js';
import { SlackBudget } from '../../src/slack/rate/slack-budget.js';
import { AgentSurfaces, webSurfaceCalls } from '../../src/slack/surfaces/agent-surfaces.js';
import { createSlackWebClient } from '../../src/slack/web-client.js';
import { SurfaceMemory } from '../../src/store/threads/surface-memory.js';
import { type FakeSlack, startFakeSlack } from '../fakes/slack-api-server.js';
import { type StoreFixture, storeFixture } from '../store/redis-fixture.js';
import { recordingLogger } from './recording-logger.js';

const CHANNEL = 'C0STORM';
let fake: FakeSlack;
let fx: StoreFixture;

beforeEach(async () => {
  fake = await startFakeSlack({ agentSurfaces: {}, rateLimits: true });
  fx = storeFixture();
});
afterEach(async () => {
  await fake.close();
  await fx.cleanup();
});

function worker() {
  const logger = recordingLogger();
  const client = createSlackWebClient({
    token: fake.token,
    apiUrl: fake.apiUrl,
    logger,
    retries: 2,
    fetch: createBufferedFetch(),
  });
  const budget = new SlackBudget({ store: fx.store.slackBudget, logger });
  return {
    budget,
    notifier: new SlackNotifier({ client, logger, budget }),
    surfaces: new AgentSurfaces({
      calls: webSurfaceCalls(client, budget),
      memory: new SurfaceMemory(fx.store.context),
      logger,
      writer: { minIntervalMs: 10, maxWaitMs: 20 },
    }),
  };
}

const ctx = (runId: string, threadTs: string) => ({
  runId,
  teamId: fake.teamId,
  channelId: CHANNEL,
  threadTs,
  requestMessageTs: threadTs,
});
const answered = (runId: string, answer: string): RunState => ({
  ...createRun({
    runId,
    requester: { userId: 'U0ASKER01' },
    systemPrompt: 's',
    question: 'Is payments healthy?',
    limits: {},
    now: Date.now(),
  }),
  status: 'completed',
  stopReason: 'completed',
  stopMessage: 'Completed.',
  answer: [answer],
});

describe('degrading by what is scarce', () => {
  it('posts answers whole, in their own threads, once Tier 2 has no stream start free', async () => {
    const w = worker();
    const runs = ['run-a', 'run-b', 'run-c'].map((runId, i) => {
      const c = ctx(runId, `1700000000.00000${i}`);
      return { c, state: answered(runId, `Answer of ${runId}.`) };
    });
    const surfaces = await Promise.all(
      runs.map(async (r) => (await w.surfaces.forRun(r.c, r.state, recordingLogger()))!),
    );
    for (const s of surfaces) await s.begin();
    for (const [i, s] of surfaces.entries()) s.text(runs[i]!.state.answer![0]!);
    const delivered: (string | null)[] = [];
    for (const [i, s] of surfaces.entries()) {
      const r = runs[i]!;
      const streamed = await s.finish(r.state);
      delivered.push(
        streamed ?? (await w.notifier.finalAnswer(r.c, { parts: r.state.answer!, stopReason: 'completed' })),
      );
    }
    // Tier 2 (20 a minute, chat.startStream and stopStream each; loopgate's budget takes 2 at once) lets
    // two streams start at once: the third answer is posted whole at once, without waiting for a slot.
    const starts = fake.callsOf('chat.startStream');
    expect(starts.map((c) => c.args.thread_ts)).toEqual([runs[0]!.c.threadTs, runs[1]!.c.threadTs]);
    for (const r of runs.slice(2)) {
      const posts = fake.callsOf('chat.postMessage').filter((c) => c.args.thread_ts === r.c.threadTs);
      expect(posts).toHaveLength(1);
      expect(String(posts[0]!.args.text)).toContain(`Answer of ${r.state.runId}.`);
    }
    expect(delivered.every((ts) => typeof ts === 'string')).toBe(true);
    expect([...fake.rateLimited.values()].reduce((a, b) => a + b, 0)).toBe(0);
  });

  it('posts nothing decorative in a channel while answers wait for its post budget, and never merges answers', async () => {
    const w = worker();
    const runs = Array.from({ length: 5 }, (_, i) => ctx(`run-${i}`, `1700000001.00000${i}`));
    const answers = runs.map((c) =>
      w.notifier.finalAnswer(c, { parts: [`Answer of ${c.runId}.`], stopReason: 'completed' }),
    );
    await fake.waitForCall('chat.postMessage');
    // Another run starts meanwhile: its placeholder would be a post in the same channel.
    const busy = ctx('run-late', '1700000001.000009');
    await w.notifier.progress(busy, 'Working on it…');
    await Promise.all(answers);
    const posts = fake.callsOf('chat.postMessage');
    expect(posts.filter((p) => p.args.thread_ts === busy.threadTs)).toEqual([]);
    for (const c of runs) {
      const own = posts.filter((p) => p.args.thread_ts === c.threadTs);
      expect(own).toHaveLength(1);
      expect(String(own[0]!.args.text)).toContain(`Answer of ${c.runId}.`);
    }
    expect(fake.rateLimited.get('chat.postMessage') ?? 0).toBe(0);
  });
});
