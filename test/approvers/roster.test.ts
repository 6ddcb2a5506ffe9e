import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createOncallRoster, type OncallRosterOptions } from '../../src/approvers/oncall/roster.js';
import { slackUserByEmail } from '../../src/approvers/oncall/slack-email.js';
import type { OncallSource } from '../../src/approvers/oncall/source.js';
import { createSlackWebClient } from '../../src/slack/web-client.js';
import { type FakePagerDutyRest, startFakePagerDutyRest } from '../fakes/pagerduty-rest-server.js';
import { type FakeSlack, startFakeSlack } from '../fakes/slack-api-server.js';
import { recordingLogger } from '../slack/recording-logger.js';
import { type StoreFixture, storeFixture } from '../store/redis-fixture.js';

const P1: OncallSource = { provider: 'pagerduty', schedule: 'P1ABC', tokenEnv: 'PD_TOKEN' };
const row = (email: string) => ({ email, escalationPolicy: 'P2DEF', level: 1, schedule: 'P1ABC' });

describe('the on-call roster (Redis cache shared by processes)', () => {
  let fx: StoreFixture;
  let pd: FakePagerDutyRest;
  let slack: FakeSlack;
  const logger = recordingLogger();

  beforeEach(async () => {
    fx = storeFixture();
    pd = await startFakePagerDutyRest();
    slack = await startFakeSlack({
      users: { U0ALICE: { email: 'alice@example.com' }, U0BOB: { email: 'bob@example.com' } },
    });
    logger.entries.length = 0;
  });
  afterEach(async () => {
    await Promise.all([fx.cleanup(), pd.close(), slack.close()]);
  });

  const roster = (over: Partial<OncallRosterOptions> = {}, redis = fx.redis) => {
    const client = createSlackWebClient({
      token: 'xoxb-fake-token',
      apiUrl: slack.apiUrl,
      logger,
      retries: 0,
    });
    return createOncallRoster({
      redis,
      keyPrefix: fx.prefix,
      env: { PD_TOKEN: 'pd-test-token', PAGERDUTY_API_URL: pd.url },
      slackUserByEmail: slackUserByEmail((email) => client.users.lookupByEmail({ email })),
      logger,
      ttlMs: 60_000,
      ...over,
    });
  };

  it('maps the on-call to Slack users by email, leaving out an email Slack does not know', async () => {
    pd.setOncalls([row('alice@example.com'), row('ghost@example.com')]);
    expect(await roster().now(P1)).toEqual({ ok: true, users: ['U0ALICE'] });
    const lookups = slack.calls.filter((c) => c.method === 'users.lookupByEmail');
    expect(lookups.map((c) => c.response?.error ?? c.response?.ok)).toEqual([true, 'users_not_found']);
  });

  it('asks the provider once per source per cache period, whatever the number of asks and processes', async () => {
    pd.setOncalls([row('alice@example.com')]);
    const a = roster();
    const b = roster({}, fx.connect().context.redis);
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).now(P1)));
    expect(new Set(answers.map((x) => JSON.stringify(x)))).toEqual(
      new Set([JSON.stringify({ ok: true, users: ['U0ALICE'] })]),
    );
    expect(pd.oncallRequests()).toHaveLength(1);
  });

  it('shows a handoff once the cache period is over', async () => {
    pd.setOncalls([row('alice@example.com')]);
    const r = roster({ ttlMs: 150 });
    expect(await r.now(P1)).toEqual({ ok: true, users: ['U0ALICE'] });
    pd.setOncalls([row('bob@example.com')]);
    const deadline = Date.now() + 10_000;
    let now = await r.now(P1);
    while (JSON.stringify(now) !== JSON.stringify({ ok: true, users: ['U0BOB'] }) && Date.now() < deadline) {
      await new Promise((res) => setTimeout(res, 20));
      now = await r.now(P1);
    }
    expect(now).toEqual({ ok: true, users: ['U0BOB'] });
  });

  it('says why when the provider refuses, remembers it for Retry-After, and never logs the token', async () => {
    pd.failNext(1, 429, 2);
    const r = roster();
    expect(await r.now(P1)).toEqual({ ok: false, why: 'PagerDuty is rate limiting (HTTP 429)' });
    expect(await r.now(P1)).toEqual({ ok: false, why: 'PagerDuty is rate limiting (HTTP 429)' });
    expect(pd.oncallRequests()).toHaveLength(1);
    const ttl = await fx.redis.pttl(`${fx.prefix}:oncall:pagerduty:schedule:P1ABC`);
    expect(ttl).toBeGreaterThan(1_000);
    expect(ttl).toBeLessThanOrEqual(2_000);
    expect(logger.entries.some((e) => e.obj.code === 'rate_limited')).toBe(true);
    expect(JSON.stringify(logger.entries)).not.toContain('pd-test-token');
  });

  it('answers nobody for an empty schedule, and names a missing token variable', async () => {
    pd.setOncalls([]);
    expect(await roster().now(P1)).toEqual({ ok: true, users: [] });
    const other: OncallSource = { ...P1, schedule: 'P7XYZ', tokenEnv: 'PD_OTHER' };
    expect(await roster().now(other)).toEqual({ ok: false, why: 'environment variable PD_OTHER is not set' });
  });

  it('falls to "nobody found in Slack" when no on-call email is a Slack member', async () => {
    pd.setOncalls([row('ghost@example.com')]);
    expect(await roster().now(P1)).toEqual({
      ok: false,
      why: 'nobody on call has a Slack account with the same email',
    });
  });
});
