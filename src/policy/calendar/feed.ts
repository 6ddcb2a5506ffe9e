/**
 * One read of a calendar feed over HTTP: bounded in time and size, no redirects followed (the address
 * is the operator's; a feed that moved is reported so the operator writes the new one), `webcal://` read
 * as https. Errors are `CalendarError`s whose messages never include the address: it is often the feed's
 * only secret.
 */
import { RequestTimeoutError, ResponseTooLargeError } from '../../tools/errors.js';
import { exchange } from '../../tools/net/http-client.js';
import { timeLimit } from '../../tools/net/time-limit.js';
import { CalendarError } from './ics-intervals.js';

const MAX_BYTES = 5_000_000;

export async function readFeed(address: string, timeoutMs: number): Promise<string> {
  const url = new URL(address.replace(/^webcal:/i, 'https:'));
  const limit = timeLimit(new AbortController().signal, timeoutMs);
  let reply: Awaited<ReturnType<typeof exchange>>;
  try {
    reply = await exchange({
      method: 'GET',
      url,
      headers: { accept: 'text/calendar, */*;q=0.5' },
      limit,
      maxBytes: MAX_BYTES,
    });
  } catch (err) {
    throw new CalendarError(unreachable(err, timeoutMs));
  }
  if (reply.status >= 300 && reply.status < 400) {
    throw new CalendarError(`the calendar answered HTTP ${reply.status} (moved): configure its new address`);
  }
  if (reply.status < 200 || reply.status >= 300) {
    throw new CalendarError(`the calendar answered HTTP ${reply.status}`);
  }
  return reply.body.toString('utf8');
}

function unreachable(err: unknown, timeoutMs: number): string {
  if (err instanceof ResponseTooLargeError) return `the calendar is larger than ${MAX_BYTES / 1e6} MB`;
  if (err instanceof RequestTimeoutError) return `the calendar did not answer within ${timeoutMs / 1000} s`;
  const code = (err as { cause?: { code?: unknown } }).cause?.code;
  return `the calendar could not be reached${typeof code === 'string' ? ` (${code})` : ''}`;
}
