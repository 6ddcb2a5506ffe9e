/**
 * The WebClient loopgate's worker uses. Rate-limited calls (429) wait for Slack's Retry-After and are
 * retried; every call gives up after a bounded number of retries and a per-request timeout, so a Slack
 * outage delays a run's messages but never hangs a worker.
 */
import { LogLevel, webApi } from '@slack/bolt';
import type { Logger } from '../loop/tool-contract.js';
import type { RunTracer } from '../telemetry/run-tracer.js';

interface SlackClientOptions {
  /** Bot token (`xoxb-…`). */
  token: string;
  /** Web API base URL, e.g. a fake server's `${url}/api/` in tests. Default: Slack's own. */
  apiUrl?: string;
  logger: Logger;
  /** Retries after the first attempt (429s, network errors, 5xx). Default 4. */
  retries?: number;
  /** Backoff before the first retry, added to any Retry-After wait. Default 500 ms. */
  minRetryDelayMs?: number;
  /** Longest backoff between retries. Default 10 s. */
  maxRetryDelayMs?: number;
  /** Per-request timeout. Default 15 s. */
  timeoutMs?: number;
  /** The fetch the client sends with. Default the built-in one. */
  fetch?: typeof fetch;
  /** Gives each call made inside a traced run a `slack <method>` span (RunTracer.slackCall). */
  tracer?: RunTracer | null;
}

/**
 * A WebClient whose every call goes through `RunTracer.slackCall`. The hook is `apiCall` itself, through
 * which each method (`chat.postMessage`, `reactions.add`, ...) goes with its retries: the methods bind it
 * when the client is built, so only a subclass (not a patched instance) reaches them all.
 */
class TracedWebClient extends webApi.WebClient {
  constructor(
    token: string,
    options: webApi.WebClientOptions,
    private readonly tracer: RunTracer,
  ) {
    super(token, options);
  }

  override apiCall(method: string, options?: Record<string, unknown>): Promise<webApi.WebAPICallResult> {
    const channel = typeof options?.channel === 'string' ? options.channel : undefined;
    return this.tracer.slackCall({ method, channel }, () => super.apiCall(method, options));
  }
}

/** Adapts loopgate's structured logger to the variadic logger @slack/web-api expects. */
function slackLogger(logger: Logger): webApi.Logger {
  let level = LogLevel.INFO;
  const line = (parts: unknown[]) =>
    parts.map((p) => (typeof p === 'string' ? p : JSON.stringify(p))).join(' ');
  return {
    debug: (...msg: unknown[]) => logger.debug({ component: 'slack-web-api' }, line(msg)),
    info: (...msg: unknown[]) => logger.info({ component: 'slack-web-api' }, line(msg)),
    warn: (...msg: unknown[]) => logger.warn({ component: 'slack-web-api' }, line(msg)),
    error: (...msg: unknown[]) => logger.error({ component: 'slack-web-api' }, line(msg)),
    setLevel: (next) => {
      level = next;
    },
    getLevel: () => level,
    setName: () => {},
  };
}

export function createSlackWebClient(opts: SlackClientOptions): webApi.WebClient {
  const options: webApi.WebClientOptions = {
    ...(opts.apiUrl ? { slackApiUrl: opts.apiUrl } : {}),
    logger: slackLogger(opts.logger),
    rejectRateLimitedCalls: false,
    retryConfig: {
      retries: opts.retries ?? 4,
      factor: 2,
      minTimeout: opts.minRetryDelayMs ?? 500,
      maxTimeout: opts.maxRetryDelayMs ?? 10_000,
      randomize: true,
    },
    timeout: opts.timeoutMs ?? 15_000,
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  };
  return opts.tracer
    ? new TracedWebClient(opts.token, options, opts.tracer)
    : new webApi.WebClient(opts.token, options);
}
