/** `loopgate doctor` reads each calendar freeze's feed once: windows and whether one is in force, or why not. */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { parsePolicy } from '../../src/config/policy.js';
import { calendarChecks } from '../../src/doctor/calendar-checks.js';
import { type FakeCalendarServer, startFakeCalendarServer } from '../fakes/calendar-feed-server.js';
import { calendar, event } from '../policy/calendar/ics-text.js';

let server: FakeCalendarServer;
beforeEach(async () => {
  server = await startFakeCalendarServer();
});
afterEach(async () => {
  await server.close();
});

it('says how many windows a calendar holds and whether one is in force, and warns of one it cannot read', async () => {
  const now = Date.parse('2026-12-06T12:00:00Z');
  server.answer('/a.ics', {
    kind: 'calendar',
    text: calendar(
      event('1', 'SUMMARY:freeze', 'DTSTART:20261206T000000Z', 'DTEND:20261207T000000Z'),
      event('2', 'SUMMARY:freeze', 'DTSTART:20261224T000000Z', 'DTEND:20261227T000000Z'),
    ),
  });
  const policy = parsePolicy(
    `
approvals: { approvers: [U0MGR] }
freezes:
  launch: { calendar: { url: "${server.url}/a.ics" } }
  gone: { calendar: { urlEnv: GONE_URL } }
`,
    { env: { GONE_URL: `${server.url}/gone.ics` } },
  );
  expect(await calendarChecks(policy, { GONE_URL: `${server.url}/gone.ics` }, now)).toEqual([
    {
      name: 'freeze launch',
      status: 'ok',
      detail: 'calendar read: 2 windows from 40 days ago to 400 days ahead; in force now',
    },
    {
      name: 'freeze gone',
      status: 'warn',
      detail:
        'the calendar answered HTTP 404: until its calendar is read, rules on this freeze cannot be decided and ask people',
    },
  ]);
});
