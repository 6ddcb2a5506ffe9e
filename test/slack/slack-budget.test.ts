import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBufferedFetch } from '../../src/http/buffered-fetch.js';
import { DEFAULT_SLACK_RATE_LIMITS, type SlackRateLimits } from '../../src/slack/rate/limits.js';
import { shareRetryAfter } from '../../src/slack/rate/share-retry-after.js';
import { SlackBudget, type SlackBudgetMetrics } from '../../src/slack/rate/slack-budget.js';
import { createSlackWebClient } from '../../src/slack/web-client.js';
import type { Store } from '../../src/store/store.js';
import { type FakeSlack, startFakeSlack } from '../fakes/slack-api-server.js';
import { type StoreFixture, storeFixture } from '../store/redis-fixture.js';
import { type LogEntry, recordingLogger } from './recording-logger.js';

const CHANNEL = 'C0BUSY';
let fake: FakeSlack;
let fx: StoreFixture;

beforeEach(async () => {
  // Slack's documented limits, enforced (test/fakes/slack-rate-limits.ts).
  fake = await startFakeSlack({ rateLimits: true });
  fx = storeFixture();
});
afterEach(async () => {
  await fake.close();
  await fx.cleanup();
});

function countingMetrics() {
  const counts = { calls: 0, rateLimited: 0, coalesced: 0, dropped: 0 };
  const metrics: SlackBudgetMetrics = {
    call: () => void counts.calls++,
    waited: () => undefined,
    rateLimited: () => void counts.rateLimited++,
    dropped: (_method, how) => void counts[how]++,
  };
  return { counts, metrics };
}

/** One loopgate process: its own Redis connection, WebClient and budget, sharing the installation's. */
function processOf(
  store: Store,
  opts: { limits?: SlackRateLimits; decorationWaitMs?: number; logs?: LogEntry[] } = {},
) {
  const logger = recordingLogger(opts.logs ?? []);
  const client = createSlackWebClient({
    token: fake.token,
    apiUrl: fake.apiUrl,
    logger,
    retries: 3,
    minRetryDelayMs: 10,
    maxRetryDelayMs: 50,
    fetch: createBufferedFetch(),
  });
  const { counts, metrics } = countingMetrics();
  const budget = new SlackBudget({
    store: store.slackBudget,
    logger,
    metrics,
    ...(opts.limits ? { limits: opts.limits } : {}),
    ...(opts.decorationWaitMs ? { decorationWaitMs: opts.decorationWaitMs } : {}),
  });
  shareRetryAfter(client, budget);
  const post = (text: string, priority: 'card' | 'answer') =>
    budget.call({ method: 'chat.postMessage', channel: CHANNEL, priority }, () =>
      client.chat.postMessage({ channel: CHANNEL, text }),
    );
  return { client, budget, counts, post };
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('the shared Slack rate budget', () => {
  it('a Retry-After seen by one process holds back the same budget in another', async () => {
    const a = processOf(fx.store);
    const b = processOf(fx.connect());
    fake.failNext('chat.postMessage', 1, { kind: 'rate_limited', retryAfterSec: 2 });
    const first = a.post('from A', 'answer');
    const refused = await fake.waitForCall('chat.postMessage', (c) => c.status === 429);
    // The pause reaches Redis from A's rate_limited event.
    const tat = fx.store.context.keys.slackBudget(['chat.postMessage', CHANNEL]).tat;
    await until(async () => Number(await fx.redis.get(tat)) > refused.at + 1_500, 'the shared pause');
    await b.post('from B', 'answer');
    const fromB = fake.callsOf('chat.postMessage').find((c) => c.args.text === 'from B');
    expect(fromB?.status).toBe(200);
    expect(fromB!.at - refused.at).toBeGreaterThanOrEqual(1_900);
    await first;
    expect(a.counts.rateLimited).toBe(1);
    expect(b.counts.rateLimited).toBe(0);
  });

  it('lets an approval card go before answers already waiting in the channel, without any 429', async () => {
    const a = processOf(fx.store);
    const b = processOf(fx.connect());
    const answers = Array.from({ length: 6 }, (_, i) => a.post(`answer ${i}`, 'answer'));
    await fake.waitForCall('chat.postMessage', (c) => c.args.text === 'answer 0');
    await b.post('approval card', 'card');
    await Promise.all(answers);
    const order = fake.callsOf('chat.postMessage').map((c) => c.args.text);
    expect(order).toHaveLength(7);
    // At most the slots already promised (the burst and a one-second horizon) went before the card.
    expect(order.indexOf('approval card')).toBeLessThanOrEqual(4);
    expect(order.slice(-2)).not.toContain('approval card');
    expect(fake.rateLimited.get('chat.postMessage') ?? 0).toBe(0);
  });

  it('answers wait in order of arrival within one priority', async () => {
    const a = processOf(fx.store);
    const answers: Promise<unknown>[] = [];
    for (let i = 0; i < 5; i++) {
      answers.push(a.post(`answer ${i}`, 'answer'));
      await new Promise((r) => setTimeout(r, 30));
    }
    await Promise.all(answers);
    expect(fake.callsOf('chat.postMessage').map((c) => c.args.text)).toEqual([
      'answer 0',
      'answer 1',
      'answer 2',
      'answer 3',
      'answer 4',
    ]);
  });

  it("coalesces a thread's statuses under pressure (the latest is sent) and drops what waits too long, logged", async () => {
    const logs: LogEntry[] = [];
    // Tier 3 at 6 a minute: one status every 10 s, no burst.
    const limits = { ...DEFAULT_SLACK_RATE_LIMITS, tier3PerMinute: 6 };
    const a = processOf(fx.store, { limits, decorationWaitMs: 1_500, logs });
    const status = (thread: string, value: string) =>
      a.budget.decorate(
        {
          method: 'agents.sessions.setStatus',
          channel: CHANNEL,
          key: `${thread} status`,
          runId: `run-${thread}`,
        },
        () =>
          a.client.apiCall('assistant.threads.setStatus', {
            channel_id: CHANNEL,
            thread_ts: thread,
            status: value,
          }),
      );
    await status('1.1', 'processing');
    // The callers never wait for room: these resolve once set aside.
    await Promise.all([status('1.1', 'thinking'), status('1.1', 'done'), status('2.2', 'other')]);
    expect(a.budget.waitingAside).toBe(2);
    await until(() => a.budget.waitingAside === 0, 'the decorations to be dropped');
    const sent = fake.callsOf('assistant.threads.setStatus').map((c) => c.args.status);
    expect(sent).toEqual(['processing']);
    expect(a.counts.coalesced).toBe(1);
    expect(a.counts.dropped).toBe(2);
    const lines = logs.filter((l) => l.msg?.startsWith("dropped a thread's decorations"));
    expect(lines.map((l) => l.obj.runId).sort()).toEqual(['run-1.1', 'run-2.2']);
  });

  it('sends the latest status once there is room again, and never drops an answer', async () => {
    const limits = { ...DEFAULT_SLACK_RATE_LIMITS, tier3PerMinute: 60 };
    const a = processOf(fx.store, { limits });
    const status = (value: string) =>
      a.budget.decorate({ method: 'agents.sessions.setStatus', channel: CHANNEL, key: 't status' }, () =>
        a.client.apiCall('assistant.threads.setStatus', {
          channel_id: CHANNEL,
          thread_ts: '3.3',
          status: value,
        }),
      );
    const update = (i: number) =>
      a.budget.call({ method: 'agents.sessions.setStatus', priority: 'answer' }, () =>
        a.client.apiCall('assistant.threads.setStatus', {
          channel_id: CHANNEL,
          thread_ts: '4.4',
          status: `a${i}`,
        }),
      );
    // Answers take the budget; statuses of thread 3.3 queue aside and coalesce.
    const answers = [update(0), update(1), update(2), update(3)];
    const statuses = [status('s1'), status('s2'), status('s3')];
    await Promise.all([...answers, ...statuses]);
    await until(() => a.budget.waitingAside === 0, 'the latest status to be sent');
    const sent = fake.callsOf('assistant.threads.setStatus').map((c) => c.args.status);
    expect(sent.filter((s) => String(s).startsWith('a')).sort()).toEqual(['a0', 'a1', 'a2', 'a3']);
    // The last answer may sleep until its slot while the status takes the next one: order across kinds is free.
    expect(sent.filter((s) => String(s).startsWith('s')).at(-1)).toBe('s3');
    expect(sent).not.toContain('s2');
    expect(fake.rateLimited.size).toBe(0);
  });
});

describe('when the budget store cannot answer', () => {
  const spec = { method: 'chat.postEphemeral', channel: CHANNEL, priority: 'card' } as const;

  it('sends a card or a note at once when Redis fails, logging that it went without the budget', async () => {
    const logs: LogEntry[] = [];
    const budget = new SlackBudget({
      store: {
        take: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6379')),
        pause: () => Promise.resolve(),
        leave: () => Promise.resolve(),
      },
      logger: recordingLogger(logs),
    });
    expect(await budget.call(spec, () => Promise.resolve('sent'))).toBe('sent');
    expect(await budget.tryNow({ ...spec, method: 'chat.startStream', priority: 'answer' })).toBe(true);
    expect(
      logs.filter((l) => l.msg === 'could not read the Slack rate budget: sending without it'),
    ).toHaveLength(2);
  });

  it('does not wait on a store that never answers longer than its bound', async () => {
    const logs: LogEntry[] = [];
    const budget = new SlackBudget({
      store: {
        take: () => new Promise(() => undefined),
        pause: () => Promise.resolve(),
        leave: () => Promise.resolve(),
      },
      logger: recordingLogger(logs),
      storeTimeoutMs: 100,
    });
    expect(await budget.call(spec, () => Promise.resolve('sent'))).toBe('sent');
    expect(logs.map((l) => l.msg)).toEqual(['could not read the Slack rate budget: sending without it']);
  });
});

describe('decorations of one thread racing for slots', () => {
  it('never sends an older status after a newer one, whichever slot is granted first', async () => {
    const grants: Array<(granted: boolean) => void> = [];
    const budget = new SlackBudget({
      store: {
        take: () =>
          new Promise((resolve) => {
            grants.push((granted) => resolve(granted ? { granted, waitMs: 0 } : { granted, nextInMs: 100 }));
          }),
        pause: () => Promise.resolve(),
        leave: () => Promise.resolve(),
      },
      logger: recordingLogger([]),
    });
    const sent: string[] = [];
    const status = (value: string) =>
      budget.decorate(
        { method: 'agents.sessions.setStatus', channel: CHANNEL, key: 't status' },
        async () => {
          sent.push(value);
        },
      );
    const first = status('older');
    const second = status('newer');
    await until(() => grants.length === 2, 'both tries to ask for a slot');
    grants[1]?.(true);
    await second;
    grants[0]?.(true);
    await first;
    expect(sent).toEqual(['newer']);
  });

  it('counts a decoration as waiting until its delayed Slack call has finished', async () => {
    let room = false;
    const budget = new SlackBudget({
      store: {
        take: () => Promise.resolve(room ? { granted: true, waitMs: 0 } : { granted: false, nextInMs: 100 }),
        pause: () => Promise.resolve(),
        leave: () => Promise.resolve(),
      },
      logger: recordingLogger([]),
    });
    let finish: () => void = () => undefined;
    let called = false;
    await budget.decorate({ method: 'agents.sessions.setStatus', channel: CHANNEL, key: 't status' }, () => {
      called = true;
      return new Promise<void>((resolve) => {
        finish = resolve;
      });
    });
    expect(budget.waitingAside).toBe(1);
    room = true;
    await until(() => called, 'the delayed status to be sent');
    expect(budget.waitingAside).toBe(1);
    finish();
    await until(() => budget.waitingAside === 0, 'the call to finish');
  });
});
