/**
 * Keeps every calendar freeze's `view` (src/policy/freezes.ts) current in this process. A feed is read at
 * most once per `refreshMinutes` for all bots and workers of an installation: the reading (its intervals,
 * or why it failed) is kept in Redis, one process takes a short lock and reads, and every process picks
 * the shared reading up on its next tick (at least once a minute). A failed read keeps the last good
 * intervals until they are `staleAfterMinutes` old; after that, and before any good read, the freeze is
 * unknown and rules on it fail closed (src/policy/freeze-condition.ts).
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { Logger } from '../../loop/tool-contract.js';
import {
  type CalendarView,
  calendarFreezes,
  type FreezeCalendar,
  type FreezesSection,
  type Interval,
} from '../freezes.js';
import { readFeed } from './feed.js';
import { CalendarError, icsIntervals } from './ics-intervals.js';

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;
/** History kept for cards and replays judged at the moment they were asked; and a year and a month ahead. */
export const CALENDAR_PAST_DAYS = 40;
export const CALENDAR_AHEAD_DAYS = 400;
const PAST_MS = CALENDAR_PAST_DAYS * DAY_MS;
const AHEAD_MS = CALENDAR_AHEAD_DAYS * DAY_MS;

interface CalendarRefresherOptions {
  freezes: FreezesSection;
  redis: Pick<Redis, 'get' | 'set' | 'del'>;
  /** The store's key prefix (without braces): `<prefix>:freeze-calendar:<name>:<address hash>`. */
  keyPrefix: string;
  env: Readonly<Record<string, string | undefined>>;
  logger: Logger;
  now?: () => number;
  /** One feed read's time limit. Default 10 s. */
  timeoutMs?: number;
  /** How often each process looks at the shared reading. Default a minute, or the refresh if shorter. */
  tickMs?: number;
}

const interval = z.strictObject({ start: z.number(), end: z.number() });
/** A reading as kept in Redis: when it was tried, and the last good intervals with when they were read. */
const reading = z.strictObject({
  triedAt: z.number(),
  why: z.string().optional(),
  good: z.strictObject({ readAt: z.number(), intervals: z.array(interval) }).optional(),
});
type Reading = z.output<typeof reading>;

export interface CalendarRefresher {
  /** Settles once every calendar has been looked at once (read, or failed). */
  ready: Promise<void>;
  /** Looks at every calendar now (what the timer does). */
  refresh(): Promise<void>;
  stop(): void;
}

function addressOf(calendar: FreezeCalendar, env: CalendarRefresherOptions['env']): string | undefined {
  return calendar.url ?? (calendar.urlEnv ? env[calendar.urlEnv] || undefined : undefined);
}

/** The view of a calendar whose address variable is not set in this process. */
const unsetAddress = (calendar: FreezeCalendar): CalendarView => ({
  kind: 'unknown',
  why: `environment variable ${calendar.urlEnv} is not set`,
});

/** A freeze's view from the shared reading at `now`. */
function viewOf(r: Reading | null, calendar: FreezeCalendar, now: number): CalendarView {
  const staleMs = calendar.staleAfterMinutes * MINUTE_MS;
  if (r?.good && now - r.good.readAt <= staleMs) {
    return { kind: 'read', intervals: r.good.intervals, readAt: r.good.readAt };
  }
  if (!r) return { kind: 'unknown', why: 'the calendar has not been read yet' };
  const why = r.why ?? 'the calendar has not been read lately';
  if (!r.good) return { kind: 'unknown', why };
  const since = new Date(r.good.readAt).toISOString().slice(0, 16).replace('T', ' ');
  return { kind: 'unknown', why: `${why}; last read ${since} UTC, longer ago than staleAfterMinutes` };
}

/** One read of a feed as the intervals around `at`, or why it could not be read. Never throws. */
async function readIntervals(
  address: string,
  calendar: FreezeCalendar,
  zone: string,
  at: number,
  timeoutMs: number,
): Promise<{ intervals: Interval[] } | { why: string }> {
  try {
    const text = await readFeed(address, timeoutMs);
    const match = calendar.match ? { match: calendar.match } : {};
    return { intervals: icsIntervals(text, { zone, ...match, from: at - PAST_MS, to: at + AHEAD_MS }) };
  } catch (err) {
    return {
      why: err instanceof CalendarError ? err.message : `the calendar could not be read (${String(err)})`,
    };
  }
}

/**
 * Reads every calendar freeze once, straight from its feed, for a command that runs once (`loopgate
 * policy test`, `policy replay`): no Redis, no timer. A calendar that cannot be read is left unknown.
 */
export async function readCalendarsOnce(
  freezes: FreezesSection,
  env: CalendarRefresherOptions['env'],
  at = Date.now(),
  timeoutMs = 10_000,
): Promise<void> {
  await Promise.all(
    calendarFreezes(freezes).map(async ([name, calendar]) => {
      const address = addressOf(calendar, env);
      if (!address) {
        calendar.view.current = unsetAddress(calendar);
        return;
      }
      const got = await readIntervals(address, calendar, freezes[name]?.timeZone ?? 'UTC', at, timeoutMs);
      calendar.view.current =
        'intervals' in got
          ? { kind: 'read', intervals: got.intervals, readAt: at }
          : { kind: 'unknown', why: got.why };
    }),
  );
}

export function startCalendarRefresher(o: CalendarRefresherOptions): CalendarRefresher {
  const now = o.now ?? Date.now;
  const timeoutMs = o.timeoutMs ?? 10_000;
  const calendars = calendarFreezes(o.freezes);

  const keyOf = (name: string, address: string) =>
    `${o.keyPrefix}:freeze-calendar:${name}:${createHash('sha256').update(address).digest('hex').slice(0, 16)}`;

  const stored = async (key: string): Promise<Reading | null> => {
    const raw = await o.redis.get(key);
    if (raw === null) return null;
    // A damaged entry is read again rather than trusted.
    try {
      const parsed = reading.safeParse(JSON.parse(raw));
      return parsed.success ? parsed.data : null;
    } catch {
      return null;
    }
  };

  const read = async (name: string, calendar: FreezeCalendar, address: string, before: Reading | null) => {
    const at = now();
    const got = await readIntervals(address, calendar, o.freezes[name]?.timeZone ?? 'UTC', at, timeoutMs);
    if ('intervals' in got) {
      o.logger.info({ freeze: name, windows: got.intervals.length }, 'freeze calendar read');
      return { triedAt: at, good: { readAt: at, intervals: got.intervals } };
    }
    o.logger.warn({ freeze: name, why: got.why }, 'freeze calendar not read');
    return { triedAt: at, why: got.why, ...(before?.good ? { good: before.good } : {}) };
  };

  const look = async (name: string, calendar: FreezeCalendar): Promise<CalendarView> => {
    const address = addressOf(calendar, o.env);
    if (!address) return unsetAddress(calendar);
    const key = keyOf(name, address);
    let r = await stored(key);
    const due = !r || now() - r.triedAt >= calendar.refreshMinutes * MINUTE_MS;
    // One process reads; the lock outlives one read, so a holder that died frees it soon.
    if (due && (await o.redis.set(`${key}:lock`, '1', 'PX', timeoutMs + 5_000, 'NX')) === 'OK') {
      try {
        r = await read(name, calendar, address, r);
        const keepMs = (calendar.staleAfterMinutes + calendar.refreshMinutes) * MINUTE_MS;
        await o.redis.set(key, JSON.stringify(r), 'PX', keepMs);
      } finally {
        await o.redis.del(`${key}:lock`);
      }
    }
    // Another process is reading a feed nobody has read yet: wait (bounded) for its reading.
    const deadline = now() + timeoutMs + 2_000;
    while (r === null && now() < deadline) {
      await new Promise((done) => setTimeout(done, 100));
      r = await stored(key);
    }
    return viewOf(r, calendar, now());
  };

  let inFlight: Promise<void> | null = null;
  const refresh = () => {
    inFlight ??= lookAll().finally(() => {
      inFlight = null;
    });
    return inFlight;
  };
  const lookAll = async () => {
    await Promise.all(
      calendars.map(async ([name, calendar]) => {
        try {
          calendar.view.current = await look(name, calendar);
        } catch (err) {
          // Redis away: the view already held stays until it is stale, as a failed read would.
          const held = calendar.view.current;
          if (held.kind === 'read' && now() - held.readAt > calendar.staleAfterMinutes * MINUTE_MS) {
            calendar.view.current = { kind: 'unknown', why: 'the shared calendar reading is unavailable' };
          }
          o.logger.warn({ freeze: name, err: (err as Error).message }, 'freeze calendar refresh failed');
        }
      }),
    );
  };

  const minRefresh = Math.min(...calendars.map(([, c]) => c.refreshMinutes * MINUTE_MS), MINUTE_MS);
  const timer =
    calendars.length === 0 ? undefined : setInterval(() => void refresh(), o.tickMs ?? minRefresh);
  timer?.unref();
  return { ready: refresh(), refresh, stop: () => clearInterval(timer) };
}
