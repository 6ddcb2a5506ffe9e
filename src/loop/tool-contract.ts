/**
 * The tool contract: what a tool is (`Tool`), what each call of it receives (`ToolContext`) and how its
 * failures are retried. The engine's own types; tool packages see src/tools/custom/tool-api.ts.
 */
import type { z } from 'zod';

export type ToolEffect = 'read' | 'write' | 'notify';

export interface Requester {
  /** Slack user id (or a local id in tests and the demo). */
  userId: string;
  teamId?: string;
  /** IANA time zone, when known (Slack users.info tz). */
  timeZone?: string;
}

/** Structural subset of pino's logger, so the engine needs no logging library. */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

export interface ToolContext {
  /** Aborted when the tool's timeout or the run's deadline passes. Tools must honour it. */
  signal: AbortSignal;
  /** `runId:toolCallId`: the same for every attempt of one call, so a receiver can dedupe. */
  idempotencyKey: string;
  runId: string;
  toolCallId: string;
  /** The run's Slack thread (`channel:thread_ts`), when it has one. */
  threadId?: string;
  requester: Requester;
  logger: Logger;
}

/** Result of a tool's post-write check; kept as evidence and shown to the model. */
export interface VerifyResult {
  ok: boolean;
  summary: string;
}

/**
 * A tool is a plain object. `execute` may throw: the engine turns a throw into a `tool_failed` result.
 * `preview` and `verify` must be read-only.
 */
export interface Tool<P extends z.ZodType = z.ZodType, R = unknown> {
  name: string;
  /** Written for the model: what it does, when to use it, what it returns. */
  description: string;
  parameters: P;
  effect: ToolEffect;
  execute(args: z.output<P>, ctx: ToolContext): Promise<R>;
  /** Human-readable text (Markdown) of what would happen, shown on the approval card. */
  preview?(args: z.output<P>, ctx: ToolContext): Promise<string>;
  /** Read-only check after a successful write/notify, e.g. a health check after a restart. */
  verify?(args: z.output<P>, result: R, ctx: ToolContext): Promise<VerifyResult>;
  /**
   * Read-only: what executing the call would change now (a dry-run, a diff). Shown on the approval card
   * and computed again immediately before execution; the call runs only when both are the same plan
   * (src/loop/plan.ts). A throw or timeout blocks execution.
   */
  plan?(args: z.output<P>, ctx: ToolContext): Promise<string>;
  /**
   * Whether the plan current at execution is the same plan as the approved one (e.g. ignoring a
   * timestamp line). Default: the exact same text. Must be pure.
   */
  samePlan?(approved: string, current: string): boolean;
  /** Per-call timeout; default from the engine limits. */
  timeoutMs?: number;
  /**
   * True when running the call twice has the effect of running it once (same idempotency key): an
   * approved call may then be retried after a transient failure or a crash.
   */
  idempotent?: boolean;
  /**
   * Automatic retries on transient failures (see src/loop/retry.ts); read tools and idempotent tools
   * default to DEFAULT_RETRY. Never applied to a non-idempotent write or notify call.
   */
  retry?: RetryPolicy;
  /**
   * Set on a sub-agent's tool (`ask_<agent>`): a call is not executed but handed to a child run of that
   * agent, and its result is the child's end (src/loop/delegate.ts). `execute` is never called.
   */
  delegate?: { agent: string };
}

/** How a call that failed transiently is tried again: exponential backoff with full jitter. */
export interface RetryPolicy {
  /** Attempts in all, the first included (1 = no retry). */
  attempts: number;
  /** Upper bound of the first wait; doubles with each retry. */
  initialDelayMs: number;
  /** Longest wait between two attempts, also the cap of a server's Retry-After. */
  maxDelayMs: number;
}

// biome-ignore lint/suspicious/noExplicitAny: a registry holds tools of every parameter type.
export type AnyTool = Tool<z.ZodType, any>;
