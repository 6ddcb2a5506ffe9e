/**
 * An iCalendar feed read as freeze intervals: a feed's own VTIMEZONE (an Outlook zone name), an IANA TZID
 * the feed does not define, floating times and all-day dates in the freeze's zone, weekly rules with
 * EXDATE, a moved and a cancelled occurrence, a cancelled event, SUMMARY matching, the window of time kept,
 * and refusals in words. A property: a calendar freeze agrees with one-off windows holding the same times.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parsePolicy } from '../../../src/config/policy.js';
import { CalendarError, icsIntervals } from '../../../src/policy/calendar/ics-intervals.js';
import { activeFreezes, type Interval } from '../../../src/policy/freezes.js';
import { calendar, event } from './ics-text.js';

const at = (iso: string) => Date.parse(iso);
const iso = (i: Interval) => [new Date(i.start).toISOString(), new Date(i.end).toISOString()];
const YEAR = { from: at('2026-01-01T00:00:00Z'), to: at('2027-12-31T00:00:00Z') };

const WINDOWS_ZONE = [
  'BEGIN:VTIMEZONE',
  'TZID:W. Europe Standard Time',
  'BEGIN:STANDARD',
  'DTSTART:16010101T030000',
  'TZOFFSETFROM:+0200',
  'TZOFFSETTO:+0100',
  'RRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=10',
  'END:STANDARD',
  'BEGIN:DAYLIGHT',
  'DTSTART:16010101T020000',
  'TZOFFSETFROM:+0100',
  'TZOFFSETTO:+0200',
  'RRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=3',
  'END:DAYLIGHT',
  'END:VTIMEZONE',
];

describe('an iCalendar feed as freeze intervals', () => {
  it('reads times in the zone the feed defines, an IANA zone it does not, UTC, and floating times in the freeze zone', () => {
    const text = calendar(
      WINDOWS_ZONE,
      event(
        'outlook',
        'SUMMARY:Launch freeze',
        'DTSTART;TZID=W. Europe Standard Time:20260701T180000',
        'DTEND;TZID=W. Europe Standard Time:20260701T200000',
      ),
      event('iana', 'SUMMARY:NY freeze', 'DTSTART;TZID=America/New_York:20261220T090000', 'DURATION:PT2H'),
      event('utc', 'SUMMARY:utc', 'DTSTART:20260301T100000Z', 'DTEND:20260301T103000Z'),
      event('floating', 'SUMMARY:floating', 'DTSTART:20260401T100000', 'DTEND:20260401T110000'),
    );
    expect(icsIntervals(text, { zone: 'Asia/Tokyo', ...YEAR }).map(iso)).toEqual([
      ['2026-03-01T10:00:00.000Z', '2026-03-01T10:30:00.000Z'],
      ['2026-04-01T01:00:00.000Z', '2026-04-01T02:00:00.000Z'], // 10:00 in Tokyo
      ['2026-07-01T16:00:00.000Z', '2026-07-01T18:00:00.000Z'], // summer time in Berlin
      ['2026-12-20T14:00:00.000Z', '2026-12-20T16:00:00.000Z'],
    ]);
  });

  it('reads an all-day event from midnight to midnight where the freeze is', () => {
    const text = calendar(
      event('xmas', 'SUMMARY:Holidays', 'DTSTART;VALUE=DATE:20261224', 'DTEND;VALUE=DATE:20261227'),
    );
    expect(icsIntervals(text, { zone: 'America/Los_Angeles', ...YEAR }).map(iso)).toEqual([
      ['2026-12-24T08:00:00.000Z', '2026-12-27T08:00:00.000Z'],
    ]);
  });

  it('expands a weekly rule across a daylight-saving change, without its EXDATE, with a moved and a cancelled occurrence', () => {
    const text = calendar(
      event(
        'weekly',
        'SUMMARY:Release freeze',
        'DTSTART;TZID=Europe/Berlin:20261015T180000',
        'DTEND;TZID=Europe/Berlin:20261015T200000',
        'RRULE:FREQ=WEEKLY;COUNT=5',
        'EXDATE;TZID=Europe/Berlin:20261022T180000',
      ),
      event(
        'weekly',
        'SUMMARY:Release freeze (moved)',
        'RECURRENCE-ID;TZID=Europe/Berlin:20261029T180000',
        'DTSTART;TZID=Europe/Berlin:20261029T120000',
        'DTEND;TZID=Europe/Berlin:20261029T130000',
      ),
      event(
        'weekly',
        'SUMMARY:Release freeze',
        'RECURRENCE-ID;TZID=Europe/Berlin:20261105T180000',
        'DTSTART;TZID=Europe/Berlin:20261105T180000',
        'DTEND;TZID=Europe/Berlin:20261105T200000',
        'STATUS:CANCELLED',
      ),
    );
    expect(icsIntervals(text, { zone: 'UTC', ...YEAR }).map(iso)).toEqual([
      ['2026-10-15T16:00:00.000Z', '2026-10-15T18:00:00.000Z'], // CEST
      ['2026-10-29T11:00:00.000Z', '2026-10-29T12:00:00.000Z'], // moved, CET
      ['2026-11-12T17:00:00.000Z', '2026-11-12T19:00:00.000Z'],
    ]);
  });

  it('leaves out cancelled events, events whose summary does not match, and times outside the window', () => {
    const text = calendar(
      event('a', 'SUMMARY:Change FREEZE', 'DTSTART:20260601T000000Z', 'DTEND:20260602T000000Z'),
      event('b', 'SUMMARY:Team lunch', 'DTSTART:20260603T000000Z', 'DTEND:20260604T000000Z'),
      event('c', 'SUMMARY:freeze', 'STATUS:CANCELLED', 'DTSTART:20260605T000000Z', 'DTEND:20260606T000000Z'),
      event('d', 'SUMMARY:old freeze', 'DTSTART:20200101T000000Z', 'DTEND:20200102T000000Z'),
      event('e', 'SUMMARY:daily freeze', 'DTSTART:20200101T000000Z', 'DURATION:PT1H', 'RRULE:FREQ=DAILY'),
    );
    const kept = icsIntervals(text, {
      zone: 'UTC',
      match: 'freeze',
      from: at('2026-05-31T00:00:00Z'),
      to: at('2026-06-03T00:00:00Z'),
    });
    expect(kept.map(iso)).toEqual([
      ['2026-05-31T00:00:00.000Z', '2026-05-31T01:00:00.000Z'],
      ['2026-06-01T00:00:00.000Z', '2026-06-02T01:00:00.000Z'],
    ]);
  });

  it('refuses what is not a calendar, and a rule that recurs too often, in words', () => {
    expect(() => icsIntervals('<html>login</html>', { zone: 'UTC', ...YEAR })).toThrow(CalendarError);
    expect(() => icsIntervals('<html>login</html>', { zone: 'UTC', ...YEAR })).toThrow(/not iCalendar/);
    const minutely = calendar(
      event('m', 'SUMMARY:tick', 'DTSTART:20000101T000000Z', 'DURATION:PT1M', 'RRULE:FREQ=MINUTELY'),
    );
    expect(() => icsIntervals(minutely, { zone: 'UTC', ...YEAR })).toThrow(/"tick" recurs too often/);
  });
});

describe('a calendar freeze in the policy', () => {
  const policy = () =>
    parsePolicy(
      `
approvals: { approvers: [U0MGR] }
freezes:
  written: { windows: [] , weekly: [], timeZone: UTC, calendar: { url: "https://cal.example/a.ics" } }
`,
      { env: {} },
    );

  it('is unknown until read, then in force inside its intervals only', () => {
    const p = policy();
    const now = at('2026-06-01T12:00:00Z');
    expect(activeFreezes(p.freezes, now)).toEqual({ inForce: [], unknown: ['written'] });
    const cell = p.freezes.written?.calendar?.view;
    if (!cell) throw new Error('expected a calendar cell');
    cell.current = { kind: 'read', readAt: now, intervals: [{ start: now - 1000, end: now + 1000 }] };
    expect(activeFreezes(p.freezes, now)).toEqual({ inForce: ['written'], unknown: [] });
    expect(activeFreezes(p.freezes, now + 1000)).toEqual({ inForce: [], unknown: [] });
  });

  it('agrees with one-off UTC windows holding the same minutes, at any moment', () => {
    const minute = 60_000;
    const base = at('2026-01-01T00:00:00Z');
    const span = fc.tuple(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 1, max: 600 }));
    fc.assert(
      fc.property(
        fc.array(span, { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 0, max: 6000 }),
        (spans, probe) => {
          const stamp = (ms: number) => new Date(ms).toISOString().replace(/[-:]|\.\d{3}/g, '');
          const text = calendar(
            ...spans.map(([s, len], i) =>
              event(
                `e${i}`,
                'SUMMARY:f',
                `DTSTART:${stamp(base + s * minute)}`,
                `DTEND:${stamp(base + (s + len) * minute)}`,
              ),
            ),
          );
          const wall = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
          const windows = spans.map(
            ([s, len]) =>
              `{ start: "${wall(base + s * minute)}", end: "${wall(base + (s + len) * minute)}" }`,
          );
          const p = parsePolicy(
            `approvals: { approvers: [U0MGR] }\nfreezes:\n  cal: { calendar: { url: "https://cal.example/a.ics" } }\n  win: { windows: [${windows.join(', ')}] }\n`,
            { env: {} },
          );
          const intervals = icsIntervals(text, {
            zone: 'UTC',
            from: base - minute,
            to: base + 7000 * minute,
          });
          const cell = p.freezes.cal?.calendar?.view;
          if (!cell) throw new Error('expected a calendar cell');
          cell.current = { kind: 'read', readAt: base, intervals };
          const active = activeFreezes(p.freezes, base + probe * minute);
          expect(active.inForce.includes('cal')).toBe(active.inForce.includes('win'));
          expect(active.unknown).toEqual([]);
        },
      ),
      { numRuns: 200 },
    );
  });
});
