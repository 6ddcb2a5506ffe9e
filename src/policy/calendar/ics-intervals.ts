/**
 * An iCalendar feed's events as the instants a calendar freeze is in force, read with ical.js (RFC 5545:
 * recurrence rules, EXDATE, moved or cancelled occurrences through RECURRENCE-ID, all-day dates, the
 * feed's own VTIMEZONE definitions). Pure: text in, sorted intervals out, for the window of time that
 * matters (a little history for cards and replays asked before now, and the year ahead).
 *
 * Times with a zone the feed defines, or UTC, are exact. A TZID the feed does not define is read as an
 * IANA zone through Intl; a floating time, an all-day date, or a TZID nobody knows is read in the freeze's
 * own `timeZone` (an all-day freeze on Dec 24 starts at midnight where the team is).
 */
import ICAL from 'ical.js';
import type { Interval } from '../freezes.js';
import { instantOf, knownZone } from './zone-time.js';

type IcalTime = InstanceType<typeof ICAL.Time>;
type IcalEvent = InstanceType<typeof ICAL.Event>;

export class CalendarError extends Error {
  override readonly name = 'CalendarError';
}

interface IcsOptions {
  /** The freeze's time zone, for floating times and dates. */
  zone: string;
  /** Only events whose SUMMARY contains this (any case). */
  match?: string;
  /** Intervals ending before `from` or starting at or after `to` (ms) are left out. */
  from: number;
  to: number;
}

/** One recurring event may take this many steps of its rule; a feed this many intervals. */
const MAX_STEPS_PER_EVENT = 50_000;
const MAX_INTERVALS = 10_000;

function instant(t: IcalTime, tzidHint: string | undefined, fallbackZone: string): number {
  if (!t.isDate && t.zone && t.zone.tzid !== 'floating') return t.toUnixTime() * 1000;
  const named = t.isDate ? undefined : tzidHint;
  const zone = knownZone(named) ? named : fallbackZone;
  return instantOf(
    { year: t.year, month: t.month, day: t.day, hour: t.hour, minute: t.minute, second: t.second },
    zone,
  );
}

const cancelled = (e: IcalEvent) =>
  String(e.component.getFirstPropertyValue('status') ?? '').toUpperCase() === 'CANCELLED';

/** The feed's VEVENTs as ical.js events, each recurring one told about its moved occurrences. */
function eventsOf(text: string): IcalEvent[] {
  let calendar: InstanceType<typeof ICAL.Component>;
  try {
    calendar = new ICAL.Component(ICAL.parse(text));
  } catch (err) {
    throw new CalendarError(`the feed is not iCalendar (${(err as Error).message.slice(0, 200)})`);
  }
  if (calendar.name !== 'vcalendar') throw new CalendarError('the feed is not an iCalendar VCALENDAR');
  const events = calendar.getAllSubcomponents('vevent').map((c) => new ICAL.Event(c));
  const masters = new Map<string, IcalEvent>();
  for (const e of events) if (!e.isRecurrenceException() && e.uid) masters.set(e.uid, e);
  const standalone: IcalEvent[] = [];
  for (const e of events) {
    if (!e.isRecurrenceException()) continue;
    const master = masters.get(e.uid);
    // An exception of a recurring event replaces one occurrence; one without its series stands alone.
    if (master?.isRecurring()) master.relateException(e);
    else standalone.push(e);
  }
  return [...events.filter((e) => !e.isRecurrenceException()), ...standalone];
}

/** The TZID written on an event's DTSTART (ical.js leaves a TZID the feed does not define floating). */
function tzidOf(event: IcalEvent, property = 'dtstart'): string | undefined {
  const tzid = event.component.getFirstProperty(property)?.getParameter('tzid');
  return typeof tzid === 'string' ? tzid : undefined;
}

function occurrences(event: IcalEvent, o: IcsOptions, push: (i: Interval, summary: string) => void): void {
  const hint = tzidOf(event);
  if (!event.isRecurring()) {
    push(
      {
        start: instant(event.startDate, hint, o.zone),
        end: instant(event.endDate, tzidOf(event, 'dtend') ?? hint, o.zone),
      },
      event.summary,
    );
    return;
  }
  const it = event.iterator();
  for (let steps = 0; ; steps++) {
    if (steps >= MAX_STEPS_PER_EVENT) {
      throw new CalendarError(`the event "${event.summary}" recurs too often to be read`);
    }
    const next = it.next();
    if (!next) return;
    const d = event.getOccurrenceDetails(next);
    if (cancelled(d.item)) continue;
    const itemHint = tzidOf(d.item) ?? hint;
    const start = instant(d.startDate, itemHint, o.zone);
    // Occurrences come in order of their original times: past the window, none can still reach into it.
    if (instant(next, hint, o.zone) >= o.to && start >= o.to) return;
    push({ start, end: instant(d.endDate, itemHint, o.zone) }, d.item.summary);
  }
}

/** Overlapping and touching intervals as one, in order. */
function merged(intervals: Interval[]): Interval[] {
  const out: Interval[] = [];
  for (const i of intervals.sort((a, b) => a.start - b.start)) {
    const last = out[out.length - 1];
    if (last && i.start <= last.end) last.end = Math.max(last.end, i.end);
    else out.push({ ...i });
  }
  return out;
}

/**
 * The intervals of `text`'s events within [from, to), merged and sorted.
 * @throws CalendarError when the text is not iCalendar or cannot be read whole.
 */
export function icsIntervals(text: string, o: IcsOptions): Interval[] {
  const match = o.match?.toLowerCase();
  const found: Interval[] = [];
  for (const event of eventsOf(text)) {
    if (cancelled(event)) continue;
    occurrences(event, o, (i, summary) => {
      if (
        match &&
        !String(summary ?? '')
          .toLowerCase()
          .includes(match)
      )
        return;
      if (i.end <= i.start || i.end <= o.from || i.start >= o.to) return;
      found.push(i);
      if (found.length > MAX_INTERVALS) {
        throw new CalendarError(`the feed has more than ${MAX_INTERVALS} events in the year around now`);
      }
    });
  }
  return merged(found);
}
