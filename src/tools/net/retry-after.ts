import type { IncomingHttpHeaders } from 'node:http';

/**
 * The wait a `Retry-After` header asks for, in ms: delay-seconds or an HTTP date (relative to `now`).
 * Undefined when absent or unreadable; a date in the past is 0.
 */
export function retryAfterMs(headers: IncomingHttpHeaders, now: number = Date.now()): number | undefined {
  const raw = headers['retry-after'];
  const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
