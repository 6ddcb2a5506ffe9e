import { afterEach, describe, expect, it } from 'vitest';
import { createBufferedFetch } from '../../src/http/buffered-fetch.js';
import { createRedisConnection } from '../../src/queue/connection.js';
import { startJobId } from '../../src/queue/job-ids.js';
import { SlackNotifier } from '../../src/slack/notifier.js';
import { budgetShape, DEFAULT_SLACK_RATE_LIMITS } from '../../src/slack/rate/limits.js';
import { SlackBudget } from '../../src/slack/rate/slack-budget.js';
import { createSlackWebClient } from '../../src/slack/web-client.js';
import { closeWorker, createRunWorker } from '../../src/worker/run-worker.js';
import { type FakeSlack, startFakeSlack } from '../fakes/slack-api-server.js';
import { scriptedModel, silentLogger } from '../support/engine.js';
import { createHarness, REDIS_URL } from '../support/worker-harness.js';

type Harness = Awaited<ReturnType<typeof createHarness>>;
let h: Harness | undefined;
let fake: FakeSlack | undefined;
const connections: ReturnType<typeof createRedisConnection>[] = [];
afterEach(async () => {
  await h?.close();
  await fake?.close();
  for (const c of connections.splice(0)) c.disconnect();
  h = undefined;
  fake = undefined;
});

/** A worker process of its own: its own Slack client and budget (the budget's state is Redis's). */
function startWorker(harness: Harness, slack: FakeSlack, name: string, answerWaitMs?: number) {
  const client = createSlackWebClient({
    token: slack.token,
    apiUrl: slack.apiUrl,
    logger: silentLogger,
    retries: 1,
    fetch: createBufferedFetch(),
  });
  const budget = new SlackBudget({
    store: harness.store.slackBudget,
    logger: silentLogger,
    ...(answerWaitMs ? { answerWaitMs } : {}),
  });
  const connection = createRedisConnection(REDIS_URL, 'worker');
  connections.push(connection);
  const worker = createRunWorker(
    { ...harness.runtime(name), notifier: new SlackNotifier({ client, logger: silentLogger, budget }) },
    connection,
    { prefix: harness.prefix, concurrency: 2, lockDurationMs: 3_000, stalledIntervalMs: 1_000 },
  );
  void worker.run();
  return worker;
}

describe('an answer Slack had no room for', () => {
  it('stays in the run, unmarked, and is delivered once by another worker after a restart', async () => {
    h = await createHarness({ model: scriptedModel([{ text: 'payments is ok' }]) });
    fake = await startFakeSlack({ rateLimits: true });
    const data = h.startJob('is payments ok?');
    // Slack said Retry-After for the channel's posts: nobody may post there for 3 s.
    const shape = budgetShape('chat.postMessage', DEFAULT_SLACK_RATE_LIMITS)!;
    await h.store.slackBudget.pause(['chat.postMessage', data.channelId], shape, 3_000);
    const first = startWorker(h, fake, 'w1', 300);
    const runId = await h.enqueueStart(data);
    await h.waitForStatus(runId, 'completed');
    const job = await h.waitFor('the job to be put back for later', async () => {
      const j = await h!.queue.getJob(startJobId(data.eventId));
      return (await j?.isDelayed()) ? j : null;
    });
    expect(job).toBeTruthy();
    expect((await h.store.runs.loadRun(runId))?.answerTs).toBeNull();
    expect(fake.callsOf('chat.postMessage')).toEqual([]);
    await closeWorker(first, 5_000);

    startWorker(h, fake, 'w2');
    const delivered = await h.waitFor(
      'the answer to be delivered',
      async () => (await h!.store.runs.loadRun(runId))?.answerTs ?? null,
      20_000,
    );
    const posts = fake.callsOf('chat.postMessage').filter((c) => c.args.thread_ts === data.threadTs);
    expect(posts).toHaveLength(1);
    expect(String(posts[0]!.args.text)).toContain('payments is ok');
    expect(posts[0]!.response?.ts).toBe(delivered);
    expect(fake.rateLimited.get('chat.postMessage') ?? 0).toBe(0);
  }, 40_000);
});
