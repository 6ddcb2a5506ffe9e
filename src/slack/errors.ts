import { LoopgateError } from '../loop/errors.js';

/** A Slack Web API call failed after the client's own retries. */
export class SlackCallError extends LoopgateError {
  constructor(
    readonly method: string,
    /** Slack's error code (`channel_not_found`, `ratelimited`, `http_500`, …) or `request_failed`. */
    readonly slackError: string,
    options?: { cause?: unknown },
  ) {
    super('slack_call_failed', `Slack ${method} failed: ${slackError}`, options);
  }
}

/** Slack's own error code of a failure thrown by @slack/web-api, for logs and SlackCallError. */
export function slackErrorCode(error: unknown): string {
  if (error !== null && typeof error === 'object') {
    const e = error as {
      code?: unknown;
      data?: { error?: unknown };
      statusCode?: unknown;
      retryAfter?: unknown;
      original?: { message?: unknown };
    };
    if (typeof e.data?.error === 'string') return e.data.error;
    // No slot of the shared rate budget came in time (src/slack/rate): nothing was sent.
    if (e.code === 'rate_budget_exhausted') return 'rate_budget_exhausted';
    if (typeof e.statusCode === 'number') return `http_${e.statusCode}`;
    if (typeof e.retryAfter === 'number') return 'ratelimited';
    // The WebClient reports retries exhausted on 429s as a request error wrapping this message.
    if (
      typeof e.original?.message === 'string' &&
      e.original.message.startsWith('A rate limit was exceeded')
    ) {
      return 'ratelimited';
    }
  }
  return 'request_failed';
}
