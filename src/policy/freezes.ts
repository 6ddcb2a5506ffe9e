/**
 * Change freezes: the policy file's `freezes:` section, named windows when changes need more care:
 *
 *   freezes:
 *     year-end:
 *       timeZone: Europe/Berlin                  # IANA zone of the times below; default UTC
 *       windows:                                 # one-off windows, local wall time, end excluded
 *         - { start: "2026-12-20 00:00", end: "2027-01-04 08:00" }
 *     weekend:
 *       timeZone: America/New_York
 *       weekly:                                  # every week; `to` before `from` runs over the week's end
 *         - { from: "fri 18:00", to: "mon 08:00" }
 *     launches:
 *       calendar: { urlEnv: FREEZE_CALENDAR_URL }  # an iCalendar feed: its events are the windows
 *
 * Rules use them under `when` (src/policy/rules.ts): `freeze: true` (any freeze in force), `freeze: false`
 * (none), or a freeze's name (or a list of names: any of them). Whether a freeze is in force is a pure
 * function of the policy and an instant (`activeFreezes`): the instant's wall time in the freeze's zone,
 * read with Intl, is compared with the written wall times, so no offset is ever computed by hand and a
 * daylight-saving change moves the window with the clocks. In the hour a "fall back" repeats, a wall time
 * in that hour is in force both times.
 *
 * A calendar freeze's windows are the events of its feed, read by src/policy/calendar/ and held in the
 * freeze's `view` cell: the one part of a loaded policy that changes after load. Until the feed has been
 * read, and once the last good reading is stale, whether that freeze is in force is unknown, and the gate
 * treats a rule on it as undecidable (failing closed: never allowed by it, asked of people).
 */
import { z } from 'zod';
import { envVarName } from '../tools/settings.js';
import { knownZone, wallAt } from './calendar/zone-time.js';

const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
const MINUTES_PER_WEEK = 7 * 24 * 60;

/** A zone Intl knows (`Europe/Berlin`, `UTC`); checked at load by building a formatter for it. */
const timeZone = z
  .string()
  .refine((zone) => knownZone(zone), { error: 'expected an IANA time zone such as Europe/Berlin or UTC' });

/** `2026-12-20 00:00` (or with a T), normalised to `2026-12-20T00:00` so wall times compare as text. */
const wallTime = z
  .string({ error: 'expected a local time such as "2026-12-20 18:00"' })
  .regex(/^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}$/, { error: 'expected a local time such as "2026-12-20 18:00"' })
  .refine((s) => validDate(s), { error: 'not a real date and time' })
  .transform((s) => s.replace(' ', 'T'));

function validDate(s: string): boolean {
  const [y, mo, d, h, mi] = s.split(/[- T:]/).map(Number) as [number, number, number, number, number];
  const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  return mo >= 1 && mo <= 12 && d >= 1 && d <= days && h <= 23 && mi <= 59;
}

/** `fri 18:00` as minutes since Monday 00:00; `24:00` ends a day. */
const weekTime = z.string({ error: 'expected a day and time such as "fri 18:00"' }).transform((s, ctx) => {
  const m = /^(mon|tue|wed|thu|fri|sat|sun) (\d{2}):(\d{2})$/i.exec(s.trim());
  const day = m ? DAYS.indexOf(m[1]?.toLowerCase() as (typeof DAYS)[number]) : -1;
  const hours = Number(m?.[2]);
  const mins = Number(m?.[3]);
  if (!m || mins > 59 || hours > 24 || (hours === 24 && mins > 0)) {
    ctx.addIssue({
      code: 'custom',
      message: 'expected a day and time such as "fri 18:00" (mon … sun, 00:00 … 24:00)',
    });
    return z.NEVER;
  }
  return (day * 24 * 60 + hours * 60 + mins) % MINUTES_PER_WEEK;
});

const oneOffWindow = z
  .strictObject({ start: wallTime, end: wallTime })
  .refine((w) => w.start < w.end, { error: 'end must come after start', path: ['end'] });

const weeklyWindow = z
  .strictObject({ from: weekTime, to: weekTime })
  .refine((w) => w.from !== w.to, { error: 'from and to are the same time: an empty window', path: ['to'] });

/** A calendar event, or an occurrence of a recurring one, as instants (ms): start included, end excluded. */
export interface Interval {
  start: number;
  end: number;
}

/** What this process knows of a calendar feed: its intervals, or why it does not know them. */
export type CalendarView =
  | { kind: 'read'; intervals: readonly Interval[]; readAt: number }
  | { kind: 'unknown'; why: string };

/**
 * Mutable on purpose: the refresher (src/policy/calendar/refresher.ts) replaces `current`. Exported for the
 * build's .d.ts: config/policy.ts's exported schema infers it.
 */
export interface CalendarCell {
  current: CalendarView;
}

/** `https://…`, `http://…` or `webcal://…` (read as https, as calendar apps do). */
const feedUrl = z
  .string({ error: 'expected an https, http or webcal URL' })
  .refine((s) => URL.canParse(s) && /^(https?|webcal):$/.test(new URL(s).protocol), {
    error: 'expected an https, http or webcal URL',
  });

/**
 * `calendar: { url | urlEnv, refreshMinutes, staleAfterMinutes, match }`. A feed's address often is its
 * only secret (a "secret address in iCal format"), so `urlEnv` names a variable holding it; the address is
 * never logged either way.
 */
const calendarSchema = z
  .strictObject({
    url: feedUrl.optional(),
    urlEnv: envVarName.optional(),
    refreshMinutes: z.number().int().min(1).max(1440).default(15),
    /** How long the last good reading is trusted when the feed cannot be read. Default 4 refreshes, ≥ 1 h. */
    staleAfterMinutes: z
      .number()
      .int()
      .min(1)
      .max(7 * 24 * 60)
      .optional(),
    /** Only events whose SUMMARY contains this text (any case) are windows; default every event. */
    match: z.string().min(1).max(200).optional(),
  })
  .refine((c) => (c.url === undefined) !== (c.urlEnv === undefined), {
    error: 'expected url or urlEnv (one of them)',
  })
  .transform((c) => ({
    ...c,
    staleAfterMinutes: c.staleAfterMinutes ?? Math.max(60, 4 * c.refreshMinutes),
    view: { current: { kind: 'unknown', why: 'the calendar has not been read yet' } } as CalendarCell,
  }))
  .refine((c) => c.staleAfterMinutes >= c.refreshMinutes, {
    error: 'staleAfterMinutes must be at least refreshMinutes',
    path: ['staleAfterMinutes'],
  });
export type FreezeCalendar = z.output<typeof calendarSchema>;

const freezeSchema = z
  .strictObject({
    timeZone: timeZone.default('UTC'),
    windows: z.array(oneOffWindow).max(100, { error: 'expected at most 100 windows' }).default([]),
    weekly: z.array(weeklyWindow).max(50, { error: 'expected at most 50 weekly windows' }).default([]),
    calendar: calendarSchema.optional(),
  })
  .refine((f) => f.windows.length + f.weekly.length > 0 || f.calendar !== undefined, {
    error: 'expected windows, weekly or calendar (a freeze with none of them is never in force)',
  });
type Freeze = z.output<typeof freezeSchema>;

const freezeName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, {
  error: 'expected a freeze name (letters, digits, - and _)',
});

/** `freezes: { <name>: { timeZone, windows, weekly } }`. */
export const freezesSection = z.record(freezeName, freezeSchema);
export type FreezesSection = z.output<typeof freezesSection>;

const pad = (n: number) => String(n).padStart(2, '0');

/** The wall time of `now` in `zone`: `2026-12-20T18:05` and minutes since that week's Monday 00:00. */
export function wallClock(now: number, zone: string): { text: string; minuteOfWeek: number } {
  const w = wallAt(now, zone);
  return {
    text: `${w.year}-${pad(w.month)}-${pad(w.day)}T${pad(w.hour)}:${pad(w.minute)}`,
    minuteOfWeek: w.weekday * 24 * 60 + w.hour * 60 + w.minute,
  };
}

/** Whether one of `freeze`'s written windows (one-off or weekly) holds `now`. */
function inWrittenWindow(freeze: Freeze, now: number): boolean {
  const { text, minuteOfWeek } = wallClock(now, freeze.timeZone);
  if (freeze.windows.some((w) => w.start <= text && text < w.end)) return true;
  return freeze.weekly.some((w) =>
    w.from < w.to
      ? w.from <= minuteOfWeek && minuteOfWeek < w.to
      : minuteOfWeek >= w.from || minuteOfWeek < w.to,
  );
}

/**
 * Whether `freeze` is in force at `now`: `unknown` only when no written window holds it and its calendar
 * has no trusted reading.
 */
export function freezeInForce(freeze: Freeze, now: number): boolean | 'unknown' {
  if (inWrittenWindow(freeze, now)) return true;
  const view = freeze.calendar?.view.current;
  if (!view) return false;
  if (view.kind === 'unknown') return 'unknown';
  return view.intervals.some((i) => i.start <= now && now < i.end);
}

/** The freezes in force at a moment by name, and those whose calendar could not tell. */
export interface FreezeState {
  inForce: readonly string[];
  unknown: readonly string[];
}

/** The freezes in force at `now` (and those not known), in the order the policy lists them. */
export function activeFreezes(freezes: FreezesSection, now: number): FreezeState {
  const inForce: string[] = [];
  const unknown: string[] = [];
  for (const [name, freeze] of Object.entries(freezes)) {
    const state = freezeInForce(freeze, now);
    if (state === true) inForce.push(name);
    else if (state === 'unknown') unknown.push(name);
  }
  return { inForce, unknown };
}

/** The calendar freezes of a policy by name (what the refresher reads). */
export function calendarFreezes(freezes: FreezesSection): [string, FreezeCalendar][] {
  return Object.entries(freezes).flatMap(([name, f]) => (f.calendar ? [[name, f.calendar] as const] : []));
}
