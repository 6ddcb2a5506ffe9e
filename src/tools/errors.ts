/**
 * Why a built-in tool refused or failed. The engine turns a thrown `LoopgateError` into
 * `{ ok: false, error: { code, message } }`, so each `code` is stable and each message tells the model what
 * went wrong and what it may do instead. Messages never contain secret values (headers, routing keys).
 */
import { ToolFailure } from '../loop/errors.js';
import { TRANSIENT_STATUSES } from '../loop/retry.js';

/**
 * A failure with a specific code that needs no context fields beyond its message; permanent unless
 * constructed with `{ transient: true }`.
 */
export class ToolError extends ToolFailure {}

/** The URL (or a redirect's target) is not under any allowlisted prefix of the tool. */
export class UrlNotAllowedError extends ToolError {
  constructor(
    readonly url: string,
    allowed: readonly string[],
    via?: string,
  ) {
    const origin = via ? `redirect from ${via} to ${url}` : url;
    super(
      'url_not_allowed',
      `${origin} is not allowed; URLs must start with one of: ${allowed.join(', ') || '(none configured)'}`,
    );
  }
}

/** The host resolves to a loopback, private, link-local or otherwise non-public address. */
export class PrivateAddressError extends ToolError {
  constructor(
    readonly host: string,
    readonly address: string,
    readonly kind: string,
  ) {
    super(
      'private_address',
      `${host} resolves to ${address} (${kind}); requests to such addresses are refused unless the ` +
        'operator allowlists that prefix with allowPrivate',
    );
  }
}

/** The body is larger than the tool reads. */
export class ResponseTooLargeError extends ToolError {
  constructor(
    readonly url: string,
    readonly limitBytes: number,
  ) {
    super(
      'response_too_large',
      `the response from ${url} is larger than the ${limitBytes}-byte limit; ask for a narrower resource ` +
        '(a filter, a smaller page, a specific item)',
    );
  }
}

/** No complete response within the tool's own time limit. */
export class RequestTimeoutError extends ToolError {
  constructor(
    readonly url: string,
    readonly timeoutMs: number,
  ) {
    super('request_timeout', `no complete response from ${url} within ${timeoutMs} ms`, { transient: true });
  }
}

/**
 * A call was answered with a status that is not success; transient for 429, 502, 503 and 504 (with the
 * server's Retry-After, when it sent one).
 */
export class HttpStatusError extends ToolError {
  constructor(
    readonly method: string,
    readonly url: string,
    readonly status: number,
    bodySnippet: string,
    options: { retryAfterMs?: number | undefined; answer?: unknown } = {},
  ) {
    const change = method === 'GET' ? '' : '; the change may not have happened';
    const { retryAfterMs, ...rest } = options;
    super(
      'http_status',
      `${method} ${url} answered ${status}${bodySnippet ? `: ${bodySnippet}` : ''}${change}`,
      {
        transient: TRANSIENT_STATUSES.has(status),
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        ...rest,
      },
    );
  }
}
