/**
 * read `http_get`: fetch a page or an API response from allowlisted URL prefixes. Redirects are followed
 * by hand, each hop checked like the first URL; hosts resolving to non-public addresses are refused unless
 * their prefix says `allowPrivate`. Bodies over `maxBytes` are refused with `response_too_large` (not
 * truncated: half a JSON document misleads more than it helps).
 */
import { z } from 'zod';
import { defineTool } from '../loop/define-tool.js';
import { TRANSIENT_STATUSES } from '../loop/retry.js';
import type { AnyTool } from '../loop/tool-contract.js';
import { HttpStatusError } from './errors.js';
import { decodeBody, formatBody } from './net/body-format.js';
import { guardedRequest } from './net/guarded-request.js';
import { type Lookup, systemLookup } from './net/lookup.js';
import { requestUrl } from './net/request-url.js';
import { retryAfterMs } from './net/retry-after.js';
import { timeLimit } from './net/time-limit.js';
import { clip } from './preview-format.js';
import { allowEntry, byteCount, type Env, resolveAllowRules, seconds, toolRetry } from './settings.js';

export const httpGetSettings = z.strictObject({
  allow: z.array(allowEntry, { error: 'expected a list of http(s) URL prefixes' }).min(1, {
    error: 'expected at least one http(s) URL prefix',
  }),
  maxBytes: byteCount.default(1_000_000),
  timeoutSeconds: seconds(120).default(10),
  retry: toolRetry.optional(),
  maxRedirects: z.number().int().min(0).max(10).default(5),
});

type HttpGetSettings = z.output<typeof httpGetSettings>;

export function createHttpGet(settings: HttpGetSettings, deps: { env: Env; lookup?: Lookup }): AnyTool {
  const rules = resolveAllowRules(settings.allow, deps.env, 'tools.http_get.allow');
  const guard = { rules, lookup: deps.lookup ?? systemLookup };
  const timeoutMs = settings.timeoutSeconds * 1000;
  const prefixes = rules.map((r) => r.prefix).join(', ');
  return defineTool({
    name: 'http_get',
    description:
      'HTTP GET a URL and return its status and body as text (JSON indented, HTML reduced to text). ' +
      `Only URLs starting with these prefixes are allowed: ${prefixes}. ` +
      'For status pages, health endpoints and internal read-only APIs.',
    parameters: z.object({
      url: requestUrl.describe('Absolute http(s) URL under one of the allowed prefixes'),
    }),
    effect: 'read',
    idempotent: true,
    // A little longer than the tool's own limit, so its clearer `request_timeout` error wins the race.
    timeoutMs: timeoutMs + 1000,
    async execute({ url }, ctx) {
      const reply = await guardedRequest(
        {
          method: 'GET',
          url,
          headers: { accept: 'application/json, text/*;q=0.9, */*;q=0.5' },
          limit: timeLimit(ctx.signal, timeoutMs),
          maxBytes: settings.maxBytes,
          maxRedirects: settings.maxRedirects,
        },
        guard,
      );
      const contentType = reply.headers['content-type'];
      const body = formatBody(decodeBody(reply.body, contentType), contentType);
      const redirected = reply.url === url ? '' : ` (redirected to ${reply.url})`;
      const answer = `HTTP ${reply.status} ${reply.statusText} for GET ${url}${redirected}\ncontent-type: ${contentType ?? 'unknown'}\n\n${body}`;
      // 429/502/503/504 may pass: retried by the engine, and if they do not pass the reply is still the
      // answer (a health endpoint says "degraded" with a 503). Other statuses are answers at once.
      if (TRANSIENT_STATUSES.has(reply.status)) {
        throw new HttpStatusError('GET', reply.url, reply.status, clip(body, 500), {
          retryAfterMs: retryAfterMs(reply.headers),
          answer,
        });
      }
      return answer;
    },
  });
}
