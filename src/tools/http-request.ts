/**
 * write `http_request`: POST/PUT/PATCH/DELETE with a JSON body to allowlisted URLs, after approval. The
 * same URL and address guards as `http_get`; redirects are not followed (a write must land where the
 * approver saw it going). Sends `Idempotency-Key` so a receiver can drop a repeated attempt. A non-2xx
 * reply is a failure the model sees with the status and the start of the body.
 */
import { z } from 'zod';
import { toolApprovers } from '../approvers/approvers.js';
import { defineTool } from '../loop/define-tool.js';
import type { AnyTool } from '../loop/tool-contract.js';
import { HttpStatusError, ToolError } from './errors.js';
import { decodeBody, formatBody } from './net/body-format.js';
import { type AllowRule, guardedRequest } from './net/guarded-request.js';
import { type Lookup, systemLookup } from './net/lookup.js';
import { requestUrl } from './net/request-url.js';
import { retryAfterMs } from './net/retry-after.js';
import { timeLimit } from './net/time-limit.js';
import { findAllowEntry } from './net/url-allowlist.js';
import { clip, codeBlock, inlineCode } from './preview-format.js';
import { allowEntry, byteCount, type Env, resolveAllowRules, seconds, toolMode } from './settings.js';

export const httpRequestSettings = z.strictObject({
  allow: z.array(allowEntry, { error: 'expected a list of http(s) URL prefixes' }).min(1, {
    error: 'expected at least one http(s) URL prefix',
  }),
  maxBytes: byteCount.default(200_000),
  timeoutSeconds: seconds(300).default(30),
  approvers: toolApprovers.optional(),
  /** `shadow`: calls are shown for decision but never run (docs/approvals.md, "Shadow mode"). */
  mode: toolMode.optional(),
});

type HttpRequestSettings = z.output<typeof httpRequestSettings>;

/**
 * The URL is normalised and checked against the allowlist already here, so the approver sees (and the
 * hash covers) the exact URL that is sent, and is never asked about a call that must fail.
 */
function parametersFor(rules: readonly AllowRule[]) {
  const allowed = rules.map((r) => r.prefix).join(', ');
  return z.object({
    method: z.enum(['POST', 'PUT', 'PATCH', 'DELETE']),
    url: requestUrl
      .refine((href) => findAllowEntry(new URL(href), rules) !== undefined, {
        error: `not an allowed URL; URLs must start with one of: ${allowed}`,
      })
      .describe('Absolute http(s) URL under one of the allowed prefixes'),
    body: z.json().optional().describe('JSON body to send (omit for none)'),
  });
}

type Args = z.output<ReturnType<typeof parametersFor>>;

function headerNames(rules: readonly AllowRule[], url: string): string[] {
  return Object.keys(findAllowEntry(new URL(url), rules)?.headers ?? {});
}

function previewOf(args: Args, rules: readonly AllowRule[]): string {
  const lines = [`**${args.method}** ${inlineCode(args.url)}`];
  lines.push(
    args.body === undefined ? '_no body_' : codeBlock(clip(JSON.stringify(args.body, null, 2)), 'json'),
  );
  const secretHeaders = headerNames(rules, args.url);
  if (secretHeaders.length > 0) {
    lines.push(`Headers from the environment (values hidden): ${secretHeaders.join(', ')}`);
  }
  return lines.join('\n');
}

export function createHttpRequest(
  settings: HttpRequestSettings,
  deps: { env: Env; lookup?: Lookup },
): AnyTool {
  const rules = resolveAllowRules(settings.allow, deps.env, 'tools.http_request.allow');
  const guard = { rules, lookup: deps.lookup ?? systemLookup };
  const timeoutMs = settings.timeoutSeconds * 1000;
  const prefixes = rules.map((r) => r.prefix).join(', ');
  return defineTool({
    name: 'http_request',
    description:
      'Send an HTTP POST, PUT, PATCH or DELETE with a JSON body to change something in an internal ' +
      `service. Only URLs starting with these prefixes are allowed: ${prefixes}. Returns the status ` +
      'and the response body; a non-2xx status is an error.',
    parameters: parametersFor(rules),
    effect: 'write',
    timeoutMs: timeoutMs + 1000,
    async preview(args) {
      return previewOf(args, rules);
    },
    async execute(args, ctx) {
      const headers: Record<string, string> = {
        'idempotency-key': ctx.idempotencyKey,
        accept: 'application/json',
      };
      if (args.body !== undefined) headers['content-type'] = 'application/json';
      const reply = await guardedRequest(
        {
          method: args.method,
          url: args.url,
          headers,
          ...(args.body === undefined ? {} : { body: JSON.stringify(args.body) }),
          limit: timeLimit(ctx.signal, timeoutMs),
          maxBytes: settings.maxBytes,
          maxRedirects: 0,
        },
        guard,
      );
      const contentType = reply.headers['content-type'];
      const text = formatBody(decodeBody(reply.body, contentType), contentType);
      if (reply.status >= 300 && reply.status < 400) {
        throw new ToolError(
          'redirect_not_followed',
          `${args.method} ${args.url} answered ${reply.status} redirecting to ${reply.headers.location ?? '(no location)'}; ` +
            'writes never follow redirects: use the final URL if it is allowed',
        );
      }
      if (reply.status < 200 || reply.status >= 300) {
        throw new HttpStatusError(args.method, args.url, reply.status, clip(text, 500), {
          retryAfterMs: retryAfterMs(reply.headers),
        });
      }
      return { status: reply.status, body: text };
    },
  });
}
