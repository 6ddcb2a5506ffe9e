/**
 * notify `page_oncall`: trigger a PagerDuty incident through the Events API v2, after approval. The
 * routing key comes from the environment and never appears in previews, results, errors or logs. The
 * dedup key is derived from the run and the summary, so a repeated attempt updates the same alert
 * instead of paging twice: the tool is idempotent.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { toolApprovers } from '../approvers/approvers.js';
import { defineTool } from '../loop/define-tool.js';
import type { AnyTool } from '../loop/tool-contract.js';
import { HttpStatusError } from './errors.js';
import { decodeBody } from './net/body-format.js';
import { exchange } from './net/http-client.js';
import { retryAfterMs } from './net/retry-after.js';
import { timeLimit } from './net/time-limit.js';
import { clip, codeBlock, inlineCode } from './preview-format.js';
import { type Env, envVarName, readSecret, seconds, serviceUrl, toolMode, toolRetry } from './settings.js';

export const pageOncallSettings = z.strictObject({
  url: serviceUrl.default('https://events.pagerduty.com/v2/enqueue'),
  routingKeyEnv: envVarName,
  /** `payload.source`: what PagerDuty shows as the affected system. */
  source: z.string().min(1).max(255).default('loopgate'),
  timeoutSeconds: seconds(120).default(15),
  retry: toolRetry.optional(),
  approvers: toolApprovers.optional(),
  /** `shadow`: calls are shown for decision but never run (docs/approvals.md, "Shadow mode"). */
  mode: toolMode.optional(),
});

type PageOncallSettings = z.output<typeof pageOncallSettings>;

const SEVERITIES = ['critical', 'error', 'warning', 'info'] as const;

const parameters = z.object({
  summary: z
    .string()
    .trim()
    .min(1)
    .max(1024)
    .describe('One line: what is wrong and where (shown in the page)'),
  severity: z.enum(SEVERITIES).describe('critical only when customers are affected now'),
  details: z
    .record(z.string().max(100), z.string().max(2000))
    .optional()
    .describe('Key/value facts for the responder, e.g. dashboards, error rates, what was tried'),
});

type Args = z.output<typeof parameters>;

/** Same run and same summary give the same key, so PagerDuty folds a retry into one alert. */
export function dedupKey(runId: string, summary: string): string {
  const digest = createHash('sha256').update(summary).digest('hex').slice(0, 16);
  return `loopgate:${runId}:${digest}`;
}

/** The Events API v2 body (holds the routing key: never log or return it). */
function triggerEvent(
  args: Args,
  meta: { routingKey: string; source: string; runId: string; requestedBy: string },
) {
  return {
    routing_key: meta.routingKey,
    event_action: 'trigger' as const,
    dedup_key: dedupKey(meta.runId, args.summary),
    client: 'loopgate',
    payload: {
      summary: args.summary,
      severity: args.severity,
      source: meta.source,
      custom_details: { ...args.details, loopgate_run: meta.runId, requested_by: meta.requestedBy },
    },
  };
}

function redact(text: string, secret: string): string {
  return text.split(secret).join('[redacted]');
}

export function createPageOncall(settings: PageOncallSettings, deps: { env: Env }): AnyTool {
  const routingKey = readSecret(deps.env, settings.routingKeyEnv, 'tools.page_oncall.routingKeyEnv');
  const timeoutMs = settings.timeoutSeconds * 1000;
  return defineTool({
    name: 'page_oncall',
    description:
      'Page the on-call engineer through PagerDuty (opens an incident). Only for problems that need a ' +
      'human now.',
    parameters,
    effect: 'notify',
    idempotent: true,
    timeoutMs: timeoutMs + 1000,
    async preview(args, ctx) {
      const lines = [
        `**Page on-call via PagerDuty**, severity **${args.severity}**`,
        `Summary: ${args.summary}`,
        `Dedup key: ${inlineCode(dedupKey(ctx.runId, args.summary))}`,
      ];
      if (args.details && Object.keys(args.details).length > 0) {
        lines.push(codeBlock(clip(JSON.stringify(args.details, null, 2), 1500), 'json'));
      }
      return lines.join('\n');
    },
    async execute(args, ctx) {
      const event = triggerEvent(args, {
        routingKey,
        source: settings.source,
        runId: ctx.runId,
        requestedBy: ctx.requester.userId,
      });
      const url = new URL(settings.url);
      const reply = await exchange({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json', 'idempotency-key': ctx.idempotencyKey },
        body: JSON.stringify(event),
        limit: timeLimit(ctx.signal, timeoutMs),
        maxBytes: 100_000,
      });
      const text = redact(decodeBody(reply.body, reply.headers['content-type']), routingKey);
      if (reply.status < 200 || reply.status >= 300) {
        throw new HttpStatusError('POST', url.href, reply.status, clip(text, 500), {
          retryAfterMs: retryAfterMs(reply.headers),
        });
      }
      return { paged: true, severity: args.severity, dedupKey: event.dedup_key, status: reply.status };
    },
  });
}
