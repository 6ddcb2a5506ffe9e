/**
 * What on-call approvers add to a click (src/approvers): the bot's authority check (mayDecide) for a card
 * asked of a PagerDuty schedule, with the on-call cached in Redis (warm), against the same check for a
 * card asked of a named user. Goal: <= 5 ms added at p99. Then 500 cards' clicks at once from two
 * processes' rosters: how many requests reach the provider in one cache period (goal: 1 per schedule).
 * Real Redis at 127.0.0.1:6379, the fake PagerDuty and Slack of test/fakes. Prints figures only.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import type { Approvers } from '../src/approvers/approvers.js';
import { createOncallRoster } from '../src/approvers/oncall/roster.js';
import { slackUserByEmail } from '../src/approvers/oncall/slack-email.js';
import type { ApproverLookups } from '../src/approvers/resolve.js';
import { mayDecide } from '../src/bot/approvers.js';
import { parsePolicy } from '../src/config/policy.js';
import { createSlackWebClient } from '../src/slack/web-client.js';
import { startFakePagerDutyRest } from '../test/fakes/pagerduty-rest-server.js';
import { startFakeSlack } from '../test/fakes/slack-api-server.js';
import { deleteKeys } from '../test/store/redis-fixture.js';
import { silentLogger } from '../test/support/engine.js';

const CLICKS = 5_000;
const CARDS = 500;

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)] ?? 0;

const prefix = `lgbench-${randomBytes(4).toString('hex')}`;
const redis = new Redis('redis://127.0.0.1:6379');
const redis2 = new Redis('redis://127.0.0.1:6379');
const pd = await startFakePagerDutyRest();
const slack = await startFakeSlack({ users: { U0ONCALL: { email: 'oncall@example.com' } } });
pd.setOncalls([{ email: 'oncall@example.com', escalationPolicy: 'P2DEF', level: 1, schedule: 'P1ABC' }]);
const client = createSlackWebClient({ token: 'xoxb-fake-token', apiUrl: slack.apiUrl, logger: silentLogger });
const rosterOn = (r: Redis) =>
  createOncallRoster({
    redis: r,
    keyPrefix: prefix,
    env: { PD: 'pd-test-token', PAGERDUTY_API_URL: pd.url },
    slackUserByEmail: slackUserByEmail((email) => client.users.lookupByEmail({ email })),
    logger: silentLogger,
    ttlMs: 60_000,
  });

const policy = parsePolicy('approvals: { selfApproval: false }', { env: {} });
const groups = { has: async () => false };
const lookups: ApproverLookups = { groups, oncall: rosterOn(redis) };
const named: Approvers = { users: ['U0ONCALL'], groups: [] };
const oncall: Approvers = {
  users: [],
  groups: [],
  oncall: [
    {
      source: { provider: 'pagerduty', schedule: 'P1ABC', tokenEnv: 'PD' },
      fallback: { users: ['U0MGR'], groups: [] },
    },
  ],
};

async function clicks(approvers: Approvers): Promise<number[]> {
  const record = { tool: 'post_message', requester: 'U0REQ', approvers, selfApproval: false };
  const samples: number[] = [];
  for (let i = 0; i < CLICKS; i++) {
    const started = performance.now();
    const verdict = await mayDecide(policy, record, 'U0ONCALL', 'approve', lookups);
    samples.push(performance.now() - started);
    if (!verdict.ok) throw new Error('the on-call was refused');
  }
  return samples;
}

try {
  await clicks(oncall); // warms the cache and the connections
  const base = await clicks(named);
  const withOncall = await clicks(oncall);
  const ms = (x: number) => `${x.toFixed(3)} ms`;
  console.log(`click check, named user:      p50 ${ms(pct(base, 0.5))}  p99 ${ms(pct(base, 0.99))}`);
  console.log(
    `click check, on-call (warm):  p50 ${ms(pct(withOncall, 0.5))}  p99 ${ms(pct(withOncall, 0.99))}`,
  );
  console.log(`added at p99: ${ms(pct(withOncall, 0.99) - pct(base, 0.99))} (goal <= 5 ms)`);

  await deleteKeys(redis, `${prefix}:*`);
  const before = pd.oncallRequests().length;
  const two = [rosterOn(redis), rosterOn(redis2)];
  const source = oncall.oncall?.[0]?.source;
  if (!source) throw new Error('no source');
  await Promise.all(Array.from({ length: CARDS }, (_, i) => two[i % 2]?.now(source)));
  console.log(
    `${CARDS} cards' clicks from 2 processes, cold cache: ${pd.oncallRequests().length - before} PagerDuty request(s) (goal 1 per schedule per period)`,
  );
} finally {
  await deleteKeys(redis, `${prefix}:*`);
  await Promise.all([pd.close(), slack.close(), redis.quit(), redis2.quit()]);
}
