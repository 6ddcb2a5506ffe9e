/**
 * One GET to an on-call provider, bounded in time and size, its JSON validated with zod. The base URL is
 * the operator's (PAGERDUTY_API_URL, OPSGENIE_API_URL): allowed explicitly like page_oncall's URL, and only
 * paths loopgate builds are requested under it (never a URL a provider answered with), so no answer can
 * steer a request elsewhere. Failures are `OncallLookupError`s with a stable code.
 */
import type { z } from 'zod';
import { exchange } from '../../tools/net/http-client.js';
import { retryAfterMs } from '../../tools/net/retry-after.js';
import { timeLimit } from '../../tools/net/time-limit.js';

type OncallLookupCode = 'rate_limited' | 'provider_error' | 'unreachable' | 'bad_response' | 'no_token';

export class OncallLookupError extends Error {
  override readonly name = 'OncallLookupError';
  constructor(
    readonly code: OncallLookupCode,
    message: string,
    /** For `rate_limited`: the wait the provider asked for (Retry-After), in ms. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

interface ProviderRequest<T> {
  url: URL;
  headers: Record<string, string>;
  schema: z.ZodType<T>;
  timeoutMs: number;
  /** For messages: `PagerDuty`, `Opsgenie`. */
  provider: string;
}

const MAX_BYTES = 2_000_000;

export async function getJson<T>(req: ProviderRequest<T>): Promise<T> {
  const limit = timeLimit(new AbortController().signal, req.timeoutMs);
  let reply: Awaited<ReturnType<typeof exchange>>;
  try {
    reply = await exchange({
      method: 'GET',
      url: req.url,
      headers: { accept: 'application/json', ...req.headers },
      limit,
      maxBytes: MAX_BYTES,
    });
  } catch (err) {
    throw new OncallLookupError(
      'unreachable',
      `${req.provider} could not be reached (${(err as Error).message})`,
    );
  }
  if (reply.status === 429) {
    const wait = retryAfterMs(reply.headers);
    throw new OncallLookupError('rate_limited', `${req.provider} is rate limiting (HTTP 429)`, wait);
  }
  if (reply.status < 200 || reply.status >= 300) {
    throw new OncallLookupError('provider_error', `${req.provider} answered HTTP ${reply.status}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(reply.body.toString('utf8'));
  } catch {
    throw new OncallLookupError('bad_response', `${req.provider} answered with something that is not JSON`);
  }
  const parsed = req.schema.safeParse(json);
  if (!parsed.success) {
    throw new OncallLookupError('bad_response', `${req.provider} answered in an unexpected shape`);
  }
  return parsed.data;
}
