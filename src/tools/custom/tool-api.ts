/**
 * The contract of a tool written outside loopgate (a `custom:` module or a tool package), as its author
 * sees it through `import { defineTool } from 'loopgate'`. It is the built-in contract
 * (src/loop/tool-contract.ts) plus what an outside tool may not reach for itself: declared secrets and a
 * guarded HTTP client.
 */
import type { z } from 'zod';
import type { Logger, Requester, RetryPolicy, ToolEffect, VerifyResult } from '../../loop/tool-contract.js';

export type { Logger, Requester, RetryPolicy, ToolEffect, VerifyResult };

/** Options of one request through {@link ToolHttp}. */
export interface HttpRequestOptions {
  /** Default `GET`. */
  method?: string;
  /** Non-secret headers. Secret headers come from the operator's `allow` entry (`headersEnv`), never from code. */
  headers?: Record<string, string>;
  /** A string is sent as is; anything else as JSON (with `content-type: application/json`). */
  body?: unknown;
  /** Time limit of this request in ms (default 10 000), within the call's own timeout. */
  timeoutMs?: number;
  /** Larger bodies are refused with `response_too_large` (default 1 000 000 bytes). */
  maxBytes?: number;
  /** Redirects followed, each checked like the first URL; default 5 for GET, 0 otherwise. */
  maxRedirects?: number;
}

/** A reply read whole (bounded by `maxBytes`). Any status is a reply: a 404 does not throw. */
export interface HttpResponse {
  /** The final URL, after redirects. */
  url: string;
  status: number;
  statusText: string;
  /** True for 2xx. */
  ok: boolean;
  headers: Record<string, string | string[] | undefined>;
  /** The body as text (UTF-8 unless the reply names another charset). */
  text(): string;
  /** The body parsed as JSON; throws on malformed JSON. */
  json(): unknown;
}

/**
 * HTTP with the guard of the built-in `http_get`: the URL and every redirect must start with a prefix the
 * operator allowlisted for this tool (`custom: [{ package, allow: [...] }]`), and the host must resolve
 * to public addresses unless that prefix says `allowPrivate`. A refused URL throws a {@link ToolFailure}
 * (`url_not_allowed`, `private_address`) that the model reads.
 */
export interface ToolHttp {
  request(url: string, options?: HttpRequestOptions): Promise<HttpResponse>;
  get(url: string, options?: Omit<HttpRequestOptions, 'method' | 'body'>): Promise<HttpResponse>;
}

/** Everything a custom tool receives with each call. */
export interface ToolContext {
  /** Aborted at the call's timeout, the run's deadline or a cancel: pass it to every I/O you start. */
  signal: AbortSignal;
  /** `runId:toolCallId`: the same for every attempt of one call, so a receiver can drop a duplicate. */
  idempotencyKey: string;
  /** The run this call belongs to. */
  runId: string;
  /** The model's id of this call, unique within the run. */
  toolCallId: string;
  /** The Slack thread of the run (`channel:thread_ts`), when the run came from Slack. */
  threadId?: string;
  /** Who asked: the Slack user whose message started the run. */
  requester: Requester;
  /** pino logger bound to the run and the call (`runId`, `toolCallId`); secret values are redacted. */
  logger: Logger;
  /**
   * The value of an environment variable this tool listed in `secrets`. Throws for a name it did not
   * list: start-up checked the listed ones are set, and only those are redacted from logs.
   */
  secret(name: string): string;
  /** HTTP through the operator's allowlist and the SSRF guard. */
  http: ToolHttp;
}

/**
 * A tool: a plain object. `execute` may throw; a {@link ToolFailure} (or its subclasses) tells the model
 * what went wrong with a stable code, any other throw becomes `tool_failed` with its message.
 */
export interface Tool<P extends z.ZodType = z.ZodType, R = unknown> {
  /** The function name the model calls: letters, digits, `_` and `-`, at most 64. */
  name: string;
  /** Written for the model: what it does, when to use it, what it returns. */
  description: string;
  /** A `z.object(...)`: the model's arguments are validated against it before anything runs. */
  parameters: P;
  /** `read` runs at once; `write` and `notify` wait for the policy (a rule or an approver's click). */
  effect: ToolEffect;
  /**
   * Environment variables this tool reads through `ctx.secret(name)`. Start-up and `check-config` refuse
   * to start when one is unset, naming the tool and the variable; their values are redacted from logs.
   */
  secrets?: readonly string[];
  /** Does the work. The return value (JSON-serialisable) is what the model reads. */
  execute(args: z.output<P>, ctx: ToolContext): Promise<R>;
  /** Markdown shown on the approval card: what would happen. Must be read-only. */
  preview?(args: z.output<P>, ctx: ToolContext): Promise<string>;
  /** Read-only check after a successful write or notify (e.g. read the record back). */
  verify?(args: z.output<P>, result: R, ctx: ToolContext): Promise<VerifyResult>;
  /**
   * Read-only: what executing the call would change now (a dry-run, a diff), as text. Shown on the card
   * and computed again immediately before an approved call runs: it runs only when the plan is the same
   * (`samePlan`, default exact); a changed plan asks the approvers again, a throw or timeout blocks it.
   */
  plan?(args: z.output<P>, ctx: ToolContext): Promise<string>;
  /** Whether two plans of a call are the same plan (e.g. ignoring a timestamp). Pure; default `===`. */
  samePlan?(approved: string, current: string): boolean;
  /** Timeout of one attempt in ms; default the engine's `toolTimeoutMs`. */
  timeoutMs?: number;
  /**
   * True when running the call twice (same `ctx.idempotencyKey`) has the effect of running it once: an
   * approved call may then be retried after a transient failure or a crash.
   */
  idempotent?: boolean;
  /** Retries on transient failures; read and idempotent tools default to 3 attempts. */
  retry?: RetryPolicy;
}

// biome-ignore lint/suspicious/noExplicitAny: a module may export tools of every parameter type.
export type AnyCustomTool = Tool<z.ZodType, any>;

/**
 * Declares a tool; an identity function that types `args` from `parameters`.
 *
 * @example
 * export default defineTool({
 *   name: 'lookup_customer', description: 'Look up a customer by id.', effect: 'read',
 *   parameters: z.object({ id: z.string() }), secrets: ['CRM_API_TOKEN'],
 *   async execute({ id }, ctx) { return (await ctx.http.get(`https://crm.example/c/${id}`)).json(); },
 * });
 */
export function defineTool<P extends z.ZodType, R>(tool: Tool<P, R>): AnyCustomTool {
  return tool as AnyCustomTool;
}
