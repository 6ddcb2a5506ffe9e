/**
 * Change freezes from iCalendar feeds end to end: loopgate's real bot and worker processes read a feed
 * served over HTTP (an event in America/New_York around now, written with a TZID the feed does not
 * define), once between them, and its freeze denies prod deploys: nothing runs, the model reads the reason.
 * A second calendar that cannot be read (HTTP 500) is unknown, never "no freeze": the deny rule on it cannot
 * decide, the allow rule after it may not let the call through, and the call is asked of people instead.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { type FakeCalendarServer, startFakeCalendarServer } from '../fakes/calendar-feed-server.js';
import { calendar, event } from '../policy/calendar/ics-text.js';
import { toolResultsSeen } from './support/deploy-case.js';
import { callThenAnswer, succeeded } from './support/model-brains.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

const DAY = 86_400_000;

/** `ms` as a New York wall time in iCalendar form (20261206T071500). */
function newYork(ms: number): string {
  const p = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: 'America/New_York',
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(new Date(ms))
      .map((x) => [x.type, x.value]),
  );
  return `${p.year}${p.month}${p.day}T${p.hour}${p.minute}${p.second}`;
}

let w: SlackWorld;
let feeds: FakeCalendarServer;
beforeAll(async () => {
  feeds = await startFakeCalendarServer();
  const now = Date.now();
  feeds.answer('/launch.ics', {
    kind: 'calendar',
    text: calendar(
      event(
        'launch-1',
        'SUMMARY:Launch freeze',
        `DTSTART;TZID=America/New_York:${newYork(now - DAY)}`,
        `DTEND;TZID=America/New_York:${newYork(now + DAY)}`,
      ),
    ),
  });
  feeds.answer('/broken.ics', { kind: 'status', status: 500 });
  w = await startSlackWorld({
    mode: 'split',
    workers: 1,
    env: { FREEZE_CALENDAR_URL: `${feeds.url}/launch.ics` },
    approvalsExtra: ['  trusted: [http_request]'],
    policyExtra: [
      'freezes:',
      '  launch:',
      '    calendar: { urlEnv: FREEZE_CALENDAR_URL }',
      '  maintenance:',
      `    calendar: { url: "${feeds.url}/broken.ics" }`,
      'rules:',
      '  http_request:',
      '    - name: no prod in the launch',
      '      when: { freeze: launch, url: { glob: "*/deploy/prod-*" } }',
      '      outcome: deny',
      '      reason: prod is frozen for the launch',
      '    - name: no edge changes in maintenance',
      '      when: { freeze: maintenance, url: { glob: "*/deploy/edge-*" } }',
      '      outcome: deny',
      '      reason: the edge is under maintenance',
      '    - name: edge changes run by themselves',
      '      when: { url: { glob: "*/deploy/edge-*" } }',
      '      outcome: allow',
    ],
  });
}, 120_000);
afterAll(async () => {
  await w?.close();
  await feeds?.close();
}, 60_000);

const DONE = 'The deploy went through.';
const NOT_DONE = 'The deploy did not happen.';

async function askToPost(tag: string, name: string) {
  const url = w.deployUrl(name);
  w.model.brain(
    tag,
    callThenAnswer('http_request', { method: 'POST', url, body: { n: 1 } }, (r) =>
      succeeded(r) ? DONE : NOT_DONE,
    ),
  );
  const asked = await w.ask(w.newChannel(), PEOPLE.requester, w.model.tagged(tag, `please post to ${name}`));
  return { url, asked };
}

describe('change freezes from calendar feeds, end to end', { timeout: 90_000 }, () => {
  it('the bot and the worker read each feed once between them', () => {
    expect(feeds.requests.filter((p) => p === '/launch.ics')).toHaveLength(1);
    expect(feeds.requests.filter((p) => p === '/broken.ics')).toHaveLength(1);
  });

  it('a calendar event in force denies a prod deploy: nothing runs, the model reads the reason', async () => {
    const { url, asked } = await askToPost('frozen', 'prod-payments');
    await w.ended(asked.runId);
    expect(w.hits(url)).toEqual([]);
    const [result] = toolResultsSeen(w, 'frozen');
    expect(result).toContain('prod is frozen for the launch');
    const [approval] = await w.store.approvals.listForRun(asked.runId);
    expect(approval).toMatchObject({
      status: 'rejected',
      rule: 'rule 1 of http_request (no prod in the launch)',
    });
  });

  it('a calendar that cannot be read is not "no freeze": the allow rule may not run the call, people are asked', async () => {
    const { url, asked } = await askToPost('unknown', 'edge-cdn');
    const card = await w.card(asked);
    expect(w.hits(url)).toEqual([]);
    const record = await w.store.approvals.get(card.approvalId);
    expect(record).toMatchObject({ status: 'pending' });
    expect(record?.rule).toBeUndefined();
    await w.click(w.message(card), PEOPLE.manager, ACTION_IDS.approve);
    await w.ended(asked.runId);
    expect(w.hits(url)).toHaveLength(1);
  });
});
