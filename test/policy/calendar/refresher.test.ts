/**
 * Calendar freezes kept current by the refresher, against real Redis and an HTTP calendar server: one read
 * per feed per refresh period for every process, the last good reading kept through failures until it is
 * stale, then unknown (never "not frozen"); failures said in words that never contain the feed's address;
 * and what the gate makes of an unknown freeze (rules on it fail closed).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Policy, parsePolicy } from '../../../src/config/policy.js';
import { secretNames } from '../../../src/config/policy-env.js';
import { readCalendarsOnce, startCalendarRefresher } from '../../../src/policy/calendar/refresher.js';
import { activeFreezes } from '../../../src/policy/freezes.js';
import { decideGate } from '../../../src/policy/gate.js';
import { type FakeCalendarServer, startFakeCalendarServer } from '../../fakes/calendar-feed-server.js';
import { recordingLogger } from '../../slack/recording-logger.js';
import { type StoreFixture, storeFixture } from '../../store/redis-fixture.js';
import { calendar, event } from './ics-text.js';

const SECRET_PATH = '/private/s3cr3t-token/basic.ics';
const MINUTE = 60_000;

function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]|\.\d{3}/g, '');
}

/** A feed with one freeze event from `start` to `end`. */
const feed = (start: number, end: number) =>
  calendar(event('f1', 'SUMMARY:Launch freeze', `DTSTART:${stamp(start)}`, `DTEND:${stamp(end)}`));

function policyFor(server: FakeCalendarServer, extra = ''): Policy {
  return parsePolicy(
    `
approvals: { approvers: [U0MGR], trusted: [http_request] }
tools:
  http_request:
    allow: ["https://deploy.example/"]
    approvers: [U0MGR]
freezes:
  launch:
    calendar: { urlEnv: FREEZE_URL, refreshMinutes: 15, staleAfterMinutes: 60${extra} }
rules:
  http_request:
    - name: no deploys in the launch freeze
      when: { freeze: launch }
      outcome: deny
      reason: launch freeze
    - name: quiet times
      when: { freeze: false }
      outcome: allow
`,
    { env: { FREEZE_URL: `${server.url}${SECRET_PATH}` } },
  );
}

describe('the calendar refresher', () => {
  let fx: StoreFixture;
  let server: FakeCalendarServer;
  const logger = recordingLogger();
  let clock = Date.parse('2026-12-06T12:00:00Z');
  const stops: (() => void)[] = [];

  beforeEach(async () => {
    fx = storeFixture();
    server = await startFakeCalendarServer();
    logger.entries.length = 0;
    clock = Date.parse('2026-12-06T12:00:00Z');
  });
  afterEach(async () => {
    for (const stop of stops.splice(0)) stop();
    await Promise.all([fx.cleanup(), server.close()]);
  });

  const refresher = (policy: Policy, redis = fx.redis) => {
    const r = startCalendarRefresher({
      freezes: policy.freezes,
      redis,
      keyPrefix: fx.prefix,
      env: { FREEZE_URL: `${server.url}${SECRET_PATH}` },
      logger,
      now: () => clock,
      timeoutMs: 2_000,
      tickMs: 3_600_000, // ticks are called by hand here
    });
    stops.push(r.stop);
    return r;
  };

  it('reads a feed once for every process, and again once the refresh period is over', async () => {
    server.answer(SECRET_PATH, { kind: 'calendar', text: feed(clock - MINUTE, clock + 30 * MINUTE) });
    const policies = [policyFor(server), policyFor(server), policyFor(server)];
    const others = [fx.connect().context.redis, fx.connect().context.redis];
    const processes = [
      refresher(policies[0]!),
      refresher(policies[1]!, others[0]),
      refresher(policies[2]!, others[1]),
    ];
    await Promise.all(processes.map((p) => p.ready));
    expect(server.requests).toEqual([SECRET_PATH]);
    for (const p of policies) expect(activeFreezes(p.freezes, clock).inForce).toEqual(['launch']);
    expect(decideGate(policies[1]!, 'http_request', {}, clock)).toMatchObject({
      kind: 'deny',
      reason: 'launch freeze',
    });

    clock += 14 * MINUTE;
    await Promise.all(processes.map((p) => p.refresh()));
    expect(server.requests).toHaveLength(1);
    clock += MINUTE;
    server.answer(SECRET_PATH, { kind: 'calendar', text: calendar() }); // the freeze was called off
    await Promise.all(processes.map((p) => p.refresh()));
    expect(server.requests).toHaveLength(2);
    // The process that read knows at once; the others pick the shared reading up at their next tick.
    await Promise.all(processes.map((p) => p.refresh()));
    expect(server.requests).toHaveLength(2);
    for (const p of policies) expect(activeFreezes(p.freezes, clock)).toEqual({ inForce: [], unknown: [] });
    expect(decideGate(policies[2]!, 'http_request', {}, clock)).toMatchObject({ kind: 'allow' });
  });

  it('keeps the last good reading through failures until it is stale, then the freeze is unknown and rules on it fail closed', async () => {
    const policy = policyFor(server);
    server.answer(SECRET_PATH, { kind: 'calendar', text: feed(clock + 10 * MINUTE, clock + 200 * MINUTE) });
    const r = refresher(policy);
    await r.ready;
    expect(decideGate(policy, 'http_request', {}, clock)).toMatchObject({ kind: 'allow' });

    server.answer(SECRET_PATH, { kind: 'status', status: 503 });
    clock += 20 * MINUTE;
    await r.refresh();
    // The failed read changes nothing yet: the freeze that began is known from the last good reading.
    expect(activeFreezes(policy.freezes, clock)).toEqual({ inForce: ['launch'], unknown: [] });

    clock += 45 * MINUTE; // the good reading is now 65 minutes old; stale after 60
    await r.refresh();
    expect(activeFreezes(policy.freezes, clock)).toEqual({ inForce: [], unknown: ['launch'] });
    const view = policy.freezes.launch?.calendar?.view.current;
    expect(view).toMatchObject({ kind: 'unknown' });
    expect(view?.kind === 'unknown' && view.why).toMatch(
      /^the calendar answered HTTP 503; last read 2026-12-06 12:00 UTC, longer ago than staleAfterMinutes$/,
    );
    // Unknown is never "not frozen": the deny rule cannot decide, the allow rule on `freeze: false` may
    // not either, and the call is asked of the tool's approvers.
    expect(decideGate(policy, 'http_request', {}, clock)).toMatchObject({ kind: 'ask', rule: null });

    server.answer(SECRET_PATH, { kind: 'calendar', text: feed(clock - 200 * MINUTE, clock + 200 * MINUTE) });
    clock += 15 * MINUTE;
    await r.refresh();
    expect(decideGate(policy, 'http_request', {}, clock)).toMatchObject({ kind: 'deny' });
  });

  it.each([
    [{ kind: 'status', status: 404 } as const, 'the calendar answered HTTP 404'],
    [
      { kind: 'moved', to: 'https://elsewhere.example/cal.ics' } as const,
      'the calendar answered HTTP 301 (moved): configure its new address',
    ],
    [{ kind: 'login-page' } as const, /^the feed is not iCalendar/],
    [{ kind: 'silent' } as const, 'the calendar did not answer within 2 s'],
  ])(
    'a feed that answers %o is unknown until read, and the reason never shows the address',
    async (answer, why) => {
      const policy = policyFor(server);
      server.answer(SECRET_PATH, answer);
      await refresher(policy).ready;
      const view = policy.freezes.launch?.calendar?.view.current;
      expect(view?.kind).toBe('unknown');
      if (view?.kind === 'unknown') expect(view.why).toMatch(why);
      expect(activeFreezes(policy.freezes, clock).unknown).toEqual(['launch']);
      const warned = logger.entries.filter((e) => e.msg === 'freeze calendar not read');
      expect(warned).toHaveLength(1);
      expect(JSON.stringify(logger.entries)).not.toContain('s3cr3t-token');
    },
  );

  it('looks at the shared reading on its own timer: a reading another process made is picked up without a call', async () => {
    server.answer(SECRET_PATH, { kind: 'status', status: 503 });
    const watcher = policyFor(server);
    const w = startCalendarRefresher({
      freezes: watcher.freezes,
      redis: fx.connect().context.redis,
      keyPrefix: fx.prefix,
      env: { FREEZE_URL: `${server.url}${SECRET_PATH}` },
      logger,
      now: () => clock,
      tickMs: 50,
    });
    stops.push(w.stop);
    await w.ready;
    expect(activeFreezes(watcher.freezes, clock).unknown).toEqual(['launch']);

    server.answer(SECRET_PATH, { kind: 'calendar', text: feed(clock, clock + 60 * MINUTE) });
    clock += 15 * MINUTE;
    const reader = policyFor(server);
    await refresher(reader).refresh();
    const deadline = Date.now() + 10_000;
    while (watcher.freezes.launch?.calendar?.view.current.kind !== 'read' && Date.now() < deadline) {
      await new Promise((done) => setTimeout(done, 20));
    }
    expect(activeFreezes(watcher.freezes, clock)).toEqual({ inForce: ['launch'], unknown: [] });
    // Read twice in all: the watcher's failed read, and the reader's once the period was over.
    expect(server.requests).toEqual([SECRET_PATH, SECRET_PATH]);
  });

  it('reads a feed again over a damaged shared reading', async () => {
    server.answer(SECRET_PATH, { kind: 'calendar', text: feed(clock - MINUTE, clock + MINUTE) });
    const policy = policyFor(server);
    const r = refresher(policy);
    await r.ready;
    const keys = await fx.redis.keys(`${fx.prefix}:freeze-calendar:launch:*`);
    const key = keys.find((k) => !k.endsWith(':lock'));
    if (!key) throw new Error('expected the shared reading');
    await fx.redis.set(key, '{not json');
    await r.refresh();
    expect(server.requests).toEqual([SECRET_PATH, SECRET_PATH]);
    expect(activeFreezes(policy.freezes, clock).inForce).toEqual(['launch']);
  });

  it('names the variable when the address is not set, and reads nothing', async () => {
    const policy = policyFor(server);
    const r = startCalendarRefresher({
      freezes: policy.freezes,
      redis: fx.redis,
      keyPrefix: fx.prefix,
      env: {},
      logger,
      now: () => clock,
    });
    stops.push(r.stop);
    await r.ready;
    expect(policy.freezes.launch?.calendar?.view.current).toEqual({
      kind: 'unknown',
      why: 'environment variable FREEZE_URL is not set',
    });
    expect(server.requests).toEqual([]);
  });

  it('counts the address variable among the secrets redacted from logs by value', () => {
    expect(secretNames(policyFor(server))).toContain('FREEZE_URL');
  });

  it('keeps events from 40 days back to 400 days ahead', async () => {
    const DAY = 24 * 60 * MINUTE;
    const policy = policyFor(server);
    server.answer(SECRET_PATH, {
      kind: 'calendar',
      text: calendar(
        ...[-41, -39, 399, 401].map((d) =>
          event(
            `d${d}`,
            'SUMMARY:f',
            `DTSTART:${stamp(clock + d * DAY)}`,
            `DTEND:${stamp(clock + d * DAY + MINUTE)}`,
          ),
        ),
      ),
    });
    await readCalendarsOnce(policy.freezes, { FREEZE_URL: `${server.url}${SECRET_PATH}` }, clock);
    const view = policy.freezes.launch?.calendar?.view.current;
    expect(view?.kind === 'read' && view.intervals.map((i) => Math.round((i.start - clock) / DAY))).toEqual([
      -39, 399,
    ]);
  });

  it('reads each feed once, without Redis, for a one-off command', async () => {
    const policy = policyFor(server, ', match: launch');
    server.answer(SECRET_PATH, { kind: 'calendar', text: feed(clock - MINUTE, clock + MINUTE) });
    await readCalendarsOnce(policy.freezes, { FREEZE_URL: `${server.url}${SECRET_PATH}` }, clock);
    expect(activeFreezes(policy.freezes, clock).inForce).toEqual(['launch']);
    expect(server.requests).toEqual([SECRET_PATH]);
  });
});
