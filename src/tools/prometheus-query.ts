/**
 * read `prometheus_query`: an instant or range PromQL query against the configured Prometheus, answered
 * with a per-series summary (labels, samples, min/max/last) rather than raw samples.
 */
import { z } from 'zod';
import { defineTool } from '../loop/define-tool.js';
import type { Clock } from '../loop/ports.js';
import { TRANSIENT_STATUSES } from '../loop/retry.js';
import type { AnyTool } from '../loop/tool-contract.js';
import { HttpStatusError, ToolError } from './errors.js';
import { decodeBody } from './net/body-format.js';
import { exchange } from './net/http-client.js';
import { retryAfterMs } from './net/retry-after.js';
import { timeLimit } from './net/time-limit.js';
import { DURATION, defaultStep, durationSeconds } from './prometheus/durations.js';
import { prometheusReply, summarise } from './prometheus/prometheus-reply.js';
import { byteCount, type Env, headersEnv, readSecret, seconds, serviceUrl, toolRetry } from './settings.js';

export const prometheusSettings = z.strictObject({
  url: serviceUrl,
  headersEnv: headersEnv.default({}),
  maxSeries: z.number().int().min(1).max(500).default(20),
  maxBytes: byteCount.default(5_000_000),
  timeoutSeconds: seconds(300).default(20),
  retry: toolRetry.optional(),
});

type PrometheusSettings = z.output<typeof prometheusSettings>;

const duration = z.string().regex(DURATION, { error: 'expected a duration such as 30s, 15m, 6h, 2d or 1w' });
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i;
/** Checked in a refinement rather than `z.iso.datetime`, whose long pattern would go into every prompt. */
const timestamp = z.string().refine((t) => RFC3339.test(t) && !Number.isNaN(Date.parse(t)), {
  error: 'expected an RFC 3339 time such as 2026-03-01T12:00:00Z',
});

const parameters = z.object({
  query: z.string().min(1).max(4000).describe('PromQL expression'),
  time: timestamp.optional().describe('Evaluation time of an instant query (RFC 3339); default now'),
  range: z
    .object({
      lookback: duration.describe('How far back from `end`, e.g. 1h'),
      step: duration.optional().describe('Resolution, e.g. 1m; default about 120 points over the range'),
      end: timestamp.optional().describe('End of the range (RFC 3339); default now'),
    })
    .optional()
    .describe('Set for a range query (a time series over a window); omit for an instant query'),
});

type Args = z.output<typeof parameters>;

/** Longest range accepted, so a careless `lookback` cannot ask Prometheus for months of samples. */
const MAX_LOOKBACK_SECONDS = 31 * 86_400;

function apiUrl(base: string, args: Args, now: number): URL {
  const root = base.endsWith('/') ? base : `${base}/`;
  if (!args.range) {
    const url = new URL('api/v1/query', root);
    url.searchParams.set('query', args.query);
    url.searchParams.set('time', args.time ?? new Date(now).toISOString());
    return url;
  }
  const lookback = durationSeconds(args.range.lookback);
  if (lookback > MAX_LOOKBACK_SECONDS) {
    throw new ToolError('range_too_long', `lookback ${args.range.lookback} is longer than 31 days`);
  }
  const end = args.range.end ? Date.parse(args.range.end) : now;
  const step = args.range.step ? durationSeconds(args.range.step) : defaultStep(lookback);
  const url = new URL('api/v1/query_range', root);
  url.searchParams.set('query', args.query);
  url.searchParams.set('start', new Date(end - lookback * 1000).toISOString());
  url.searchParams.set('end', new Date(end).toISOString());
  url.searchParams.set('step', `${step}s`);
  return url;
}

function parseReply(text: string, status: number, url: string) {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ToolError(
      'prometheus_bad_reply',
      `Prometheus at ${url} answered HTTP ${status} with a body that is not JSON: ${text.slice(0, 200)}`,
    );
  }
  const parsed = prometheusReply.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || '(top level)';
    throw new ToolError(
      'prometheus_bad_reply',
      `Prometheus at ${url} answered HTTP ${status} with JSON that is not a Prometheus API reply (${where}: ${issue?.message})`,
    );
  }
  return parsed.data;
}

export function createPrometheusQuery(
  settings: PrometheusSettings,
  deps: { env: Env; clock: Clock },
): AnyTool {
  const headers = Object.fromEntries(
    Object.entries(settings.headersEnv).map(([h, name]) => [
      h,
      readSecret(deps.env, name, `tools.prometheus_query.headersEnv.${h}`),
    ]),
  );
  const timeoutMs = settings.timeoutSeconds * 1000;
  return defineTool({
    name: 'prometheus_query',
    description:
      'Run a PromQL query against Prometheus. Without `range` it is an instant query (current values); ' +
      'with `range` it covers a window (e.g. lookback 1h). Returns a summary per series: labels, sample ' +
      `count, last value, and for ranges min/max and first/last times; at most ${settings.maxSeries} ` +
      'series, highest last value first (use topk/bottomk or sum by (...) to narrow large results).',
    parameters,
    effect: 'read',
    idempotent: true,
    timeoutMs: timeoutMs + 1000,
    async execute(args, ctx) {
      const url = apiUrl(settings.url, args, deps.clock.now());
      const reply = await exchange({
        method: 'GET',
        url,
        headers: { ...headers, accept: 'application/json' },
        limit: timeLimit(ctx.signal, timeoutMs),
        maxBytes: settings.maxBytes,
      });
      const base = `${url.origin}${url.pathname}`;
      if (TRANSIENT_STATUSES.has(reply.status)) {
        const text = decodeBody(reply.body, reply.headers['content-type']).slice(0, 200);
        throw new HttpStatusError('GET', base, reply.status, text, {
          retryAfterMs: retryAfterMs(reply.headers),
        });
      }
      const parsed = parseReply(decodeBody(reply.body, reply.headers['content-type']), reply.status, base);
      if (parsed.status === 'error') {
        throw new ToolError(
          'prometheus_error',
          `Prometheus refused the query (${parsed.errorType}): ${parsed.error}`,
        );
      }
      const summary = summarise(parsed.data, settings.maxSeries);
      const range = args.range
        ? {
            start: url.searchParams.get('start'),
            end: url.searchParams.get('end'),
            step: url.searchParams.get('step'),
          }
        : undefined;
      return {
        query: args.query,
        ...(range ? { range } : { time: url.searchParams.get('time') }),
        ...summary,
        ...(parsed.warnings?.length ? { warnings: parsed.warnings } : {}),
      };
    },
  });
}
