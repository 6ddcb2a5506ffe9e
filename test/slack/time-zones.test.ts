import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SlackBudgetExhausted } from '../../src/slack/rate/slack-budget.js';
import { createTimeZoneLookup, type TimeZoneLookupOptions } from '../../src/slack/time-zones.js';
import { createSlackWebClient } from '../../src/slack/web-client.js';
import { type FakeSlack, startFakeSlack } from '../fakes/slack-api-server.js';
import { type LogEntry, recordingLogger } from './recording-logger.js';

let fake: FakeSlack;
let logs: LogEntry[];
let now: number;
beforeEach(async () => {
  fake = await startFakeSlack({
    users: { U0PARIS: { tz: 'Europe/Paris' }, U0TOKYO: { tz: 'Asia/Tokyo' } },
  });
  logs = [];
  now = 1_767_000_000_000;
});
afterEach(async () => {
  await fake.close();
});

function lookup(options: Partial<TimeZoneLookupOptions> = {}) {
  const logger = recordingLogger(logs);
  const client = createSlackWebClient({
    token: fake.token,
    apiUrl: fake.apiUrl,
    logger,
    retries: 2,
    minRetryDelayMs: 10,
    maxRetryDelayMs: 50,
  });
  return createTimeZoneLookup({
    usersInfo: (user) => client.users.info({ user }),
    clock: { now: () => now },
    logger,
    ...options,
  });
}

describe("requesters' time zones (users.info)", () => {
  it("answers each user's zone, asking Slack once per user while it is fresh", async () => {
    const zoneOf = lookup({ ttlMs: 60_000 });
    expect(await Promise.all([zoneOf('U0PARIS'), zoneOf('U0PARIS'), zoneOf('U0TOKYO')])).toEqual([
      'Europe/Paris',
      'Europe/Paris',
      'Asia/Tokyo',
    ]);
    expect(await zoneOf('U0PARIS')).toBe('Europe/Paris');
    expect(fake.callsOf('users.info').map((c) => c.args.user)).toEqual(['U0PARIS', 'U0TOKYO']);
    now += 60_001;
    await zoneOf('U0PARIS');
    expect(fake.callsOf('users.info')).toHaveLength(3);
  });

  it('goes on without a zone when Slack refuses, says so once, and asks again only after a while', async () => {
    const zoneOf = lookup({ failureTtlMs: 30_000 });
    fake.failNext('users.info', 2, { kind: 'error', error: 'missing_scope' });
    expect(await zoneOf('U0PARIS')).toBeUndefined();
    expect(await zoneOf('U0TOKYO')).toBeUndefined();
    expect(await zoneOf('U0PARIS')).toBeUndefined();
    expect(fake.callsOf('users.info')).toHaveLength(2);
    const warnings = logs.filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.obj.code).toBe('missing_scope');
    now += 30_001;
    expect(await zoneOf('U0PARIS')).toBe('Europe/Paris');
  });

  it('does not hold a run up while Slack is slow; the late answer serves the next run', async () => {
    const zoneOf = lookup({ waitMs: 100 });
    fake.failNext('users.info', 1, { kind: 'rate_limited', retryAfterSec: 1 });
    const started = performance.now();
    expect(await zoneOf('U0PARIS')).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(900);
    const until = Date.now() + 10_000;
    while (fake.callsOf('users.info').filter((c) => c.status === 200).length === 0 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 50));
    expect(await zoneOf('U0PARIS')).toBe('Europe/Paris');
  });

  it('skips a lookup the rate budget has no room for, silently and without caching: the next run asks again', async () => {
    let room = false;
    const client = createSlackWebClient({
      token: fake.token,
      apiUrl: fake.apiUrl,
      logger: recordingLogger(logs),
    });
    const zoneOf = lookup({
      usersInfo: (user) =>
        room ? client.users.info({ user }) : Promise.reject(new SlackBudgetExhausted('users.info', 0)),
    });
    expect(await zoneOf('U0PARIS')).toBeUndefined();
    expect(logs.filter((l) => l.level !== 'debug')).toEqual([]);
    room = true;
    expect(await zoneOf('U0PARIS')).toBe('Europe/Paris');
    expect(fake.callsOf('users.info')).toHaveLength(1);
  });
});
