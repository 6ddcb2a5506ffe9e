/** read `current_time`: now, in the requester's time zone (or one the model names), ISO and human form. */
import { z } from 'zod';
import { defineTool } from '../loop/define-tool.js';
import type { Clock } from '../loop/ports.js';
import type { AnyTool } from '../loop/tool-contract.js';
import { ToolError } from './errors.js';

type FormatKind = 'offset' | 'iso' | 'human';

const FORMAT_OPTIONS: Record<FormatKind, [string, Intl.DateTimeFormatOptions]> = {
  offset: ['en-US', { timeZoneName: 'longOffset' }],
  iso: [
    'en-CA',
    {
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    },
  ],
  human: ['en-GB', { dateStyle: 'full', timeStyle: 'long' }],
};

/** Most formatters kept; zones in use are few, and a model naming many distinct zones only evicts. */
const MAX_FORMATTERS = 600;
const formatters = new Map<string, Intl.DateTimeFormat>();

/**
 * A formatter per kind and zone, built once: building an Intl.DateTimeFormat costs far more than using
 * one (it was most of this tool's time). Throws a RangeError for an unknown zone, like the constructor.
 */
function formatter(kind: FormatKind, zone: string): Intl.DateTimeFormat {
  const key = `${kind} ${zone}`;
  let format = formatters.get(key);
  if (!format) {
    const [locale, options] = FORMAT_OPTIONS[kind];
    format = new Intl.DateTimeFormat(locale, { ...options, timeZone: zone });
    if (formatters.size >= MAX_FORMATTERS) formatters.delete(formatters.keys().next().value ?? '');
    formatters.set(key, format);
  }
  return format;
}

function isTimeZone(zone: string): boolean {
  try {
    formatter('iso', zone);
    return true;
  } catch {
    return false;
  }
}

/** `+01:00` style offset of `zone` at `instant`. */
function offsetOf(instant: Date, zone: string): string {
  const part = formatter('offset', zone)
    .formatToParts(instant)
    .find((p) => p.type === 'timeZoneName')?.value;
  // `GMT` alone means a zero offset; otherwise `GMT+05:30`.
  return !part || part === 'GMT' ? '+00:00' : part.replace('GMT', '');
}

/** Local wall-clock time of `instant` in `zone` as ISO 8601 with the zone's offset. */
function localIso(instant: Date, zone: string): string {
  const parts = Object.fromEntries(
    formatter('iso', zone)
      .formatToParts(instant)
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${offsetOf(instant, zone)}`;
}

function human(instant: Date, zone: string): string {
  return formatter('human', zone).format(instant);
}

export function createCurrentTime(deps: { clock: Clock }): AnyTool {
  return defineTool({
    name: 'current_time',
    description:
      "The current date and time, in the requester's time zone unless you name another IANA zone " +
      '(e.g. Europe/Berlin). Use it before reasoning about "today", "last night" or time windows.',
    parameters: z.object({
      timeZone: z
        .string()
        .optional()
        .describe('IANA time zone such as America/New_York; default the requester'),
    }),
    effect: 'read',
    idempotent: true,
    async execute({ timeZone }, ctx) {
      if (timeZone !== undefined && !isTimeZone(timeZone)) {
        throw new ToolError(
          'unknown_time_zone',
          `${timeZone} is not an IANA time zone (e.g. Europe/Paris, UTC)`,
        );
      }
      // A requester's zone comes from Slack; if this runtime does not know it, UTC is the honest answer.
      const own = ctx.requester.timeZone;
      const zone = timeZone ?? (own !== undefined && isTimeZone(own) ? own : 'UTC');
      const now = new Date(deps.clock.now());
      return { timeZone: zone, local: localIso(now, zone), utc: now.toISOString(), human: human(now, zone) };
    },
  });
}
