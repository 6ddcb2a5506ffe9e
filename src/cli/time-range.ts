/** Instants on the command line: an ISO 8601 date-time, or a span back from now such as `24h`. */
import { UsageError } from './errors.js';
import { utc } from './format.js';

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** ISO dates need a full date; a bare `2026` or `5` is more likely a typo than an instant. */
const ISO = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * Milliseconds since the epoch of `text`: `2026-01-02`, `2026-01-02T10:00:00Z`, `2026-01-02T10:00+01:00`
 * (a date-time without an offset is UTC), or `90s`, `30m`, `24h`, `7d`, `2w` before `now`. Undefined when
 * `text` is neither.
 */
export function parseInstant(text: string, now: number): number | undefined {
  const span = /^(\d{1,6})([smhdw])$/.exec(text);
  if (span) return now - Number(span[1]) * (UNIT_MS[span[2] as string] ?? 0);
  if (!ISO.test(text)) return undefined;
  const withZone = /[T ]\d{2}:\d{2}/.test(text) && !/(?:Z|[+-]\d{2}:?\d{2})$/.test(text) ? `${text}Z` : text;
  const ms = Date.parse(withZone.replace(' ', 'T'));
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * The `--since` (required) and `--until` (default now) of a listing command, both inclusive. Throws a
 * UsageError naming the option that is missing, unreadable or out of order.
 */
export function parseTimeRange(
  values: { since?: string | undefined; until?: string | undefined },
  now: number,
  help: string,
): { from: number; to: number } {
  const { since, until } = values;
  if (since === undefined) throw new UsageError('--since is required', help);
  const from = parseInstant(since, now);
  if (from === undefined) throw new UsageError(`--since: not a time: ${JSON.stringify(since)}`, help);
  const to = until === undefined ? now : parseInstant(until, now);
  if (to === undefined) throw new UsageError(`--until: not a time: ${JSON.stringify(until)}`, help);
  if (to < from) throw new UsageError(`--until (${utc(to)}) is before --since (${utc(from)})`, help);
  return { from, to };
}
