/**
 * Wall times of a calendar (floating times, all-day dates, a TZID the feed did not define) as instants,
 * read with Intl so daylight saving is the zone database's, not ours. The inverse of freezes.ts's
 * `wallClock`: in a "spring forward" gap the later reading wins; in a repeated "fall back" hour, the first.
 */

interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const DAY_MS = 24 * 60 * 60_000;

const formatters = new Map<string, Intl.DateTimeFormat>();

/** One formatter per zone (building one costs far more than using it). */
function formatterFor(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      weekday: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** Whether Intl knows `zone` (an IANA name such as Europe/Berlin). */
export function knownZone(zone: string | undefined): zone is string {
  if (!zone) return false;
  try {
    formatterFor(zone);
    return true;
  } catch {
    return false;
  }
}

const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

/** What `zone`'s clocks show at `instant`; `weekday` 0 is Monday. */
export function wallAt(instant: number, zone: string): WallTime & { weekday: number } {
  const p: Record<string, string> = {};
  for (const part of formatterFor(zone).formatToParts(new Date(instant))) p[part.type] = part.value;
  return {
    year: Number(p.year),
    month: Number(p.month),
    day: Number(p.day),
    hour: Number(p.hour),
    minute: Number(p.minute),
    second: Number(p.second),
    weekday: WEEKDAYS.indexOf(p.weekday ?? ''),
  };
}

/** How far `zone`'s wall clock is ahead of UTC at `instant`, in ms. */
function offsetAt(instant: number, zone: string): number {
  const w = wallAt(instant, zone);
  const wall = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  return wall - Math.floor(instant / 1000) * 1000;
}

/** The instant (ms) at which `zone`'s clocks show `wall`. */
export function instantOf(wall: WallTime, zone: string): number {
  const asUtc = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second);
  // The offsets a day either side bracket any change; a reading is real when its offset holds there.
  const before = asUtc - offsetAt(asUtc - DAY_MS, zone);
  const after = asUtc - offsetAt(asUtc + DAY_MS, zone);
  const real = [before, after].filter((t) => asUtc - offsetAt(t, zone) === t);
  // In a gap no reading is real: the wall time read with the offset before the change, as clocks do.
  return real.length > 0 ? Math.min(...real) : before;
}
