/**
 * What is safe to try again, and when. Pure functions: the engine's retry loop (execute.ts) asks them
 * whether a failure is transient and how long to wait before the next attempt.
 */
import { LoopgateError, ToolTimeoutError } from './errors.js';
import type { Sleep } from './ports.js';
import type { AnyTool, RetryPolicy } from './tool-contract.js';

/** Retries of read and idempotent tools that declare none: 3 attempts, waits up to 0.25 s, 0.5 s, … 5 s. */
export const DEFAULT_RETRY: RetryPolicy = { attempts: 3, initialDelayMs: 250, maxDelayMs: 5_000 };

/** No retry: what a non-idempotent write or notify call gets, whatever its policy says. */
export const NO_RETRY: RetryPolicy = { attempts: 1, initialDelayMs: 0, maxDelayMs: 0 };

/** Node and undici error codes of failures that may pass: connection refused or reset, DNS try-again. */
const TRANSIENT_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
]);

/** HTTP statuses worth another attempt: too many requests, bad gateway, unavailable, gateway timeout. */
export const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

interface FailureClass {
  transient: boolean;
  /** The server's Retry-After, in ms, when known. */
  retryAfterMs?: number;
}

function field(err: unknown, key: string): unknown {
  return err !== null && typeof err === 'object' ? (err as Record<string, unknown>)[key] : undefined;
}

/**
 * Classifies a thrown error. A tool's own verdict (`transient` on the error, as ToolFailure carries it)
 * wins; then the engine's timeout; then a system error code (also on `cause`, as fetch wraps it); then an
 * HTTP `status`/`statusCode` on the error. Anything else is permanent: not retried.
 */
export function classifyFailure(err: unknown): FailureClass {
  const declared = field(err, 'transient');
  const retryAfter = field(err, 'retryAfterMs');
  const retryAfterMs =
    typeof retryAfter === 'number' && Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter : undefined;
  const withDelay = (transient: boolean): FailureClass =>
    retryAfterMs === undefined ? { transient } : { transient, retryAfterMs };
  if (typeof declared === 'boolean') return withDelay(declared);
  if (err instanceof ToolTimeoutError) return { transient: true };
  if (err instanceof LoopgateError) return withDelay(false);
  for (const e of [err, field(err, 'cause')]) {
    const code = field(e, 'code');
    if (typeof code === 'string' && TRANSIENT_CODES.has(code)) return withDelay(true);
  }
  const status = field(err, 'status') ?? field(err, 'statusCode');
  if (typeof status === 'number') return withDelay(TRANSIENT_STATUSES.has(status));
  return withDelay(false);
}

/**
 * The wait after failed attempt number `failed` (1-based): full jitter, uniform in [0, min(max,
 * initial × 2^(failed-1))). A server's Retry-After replaces it, capped at `maxDelayMs`.
 */
export function retryDelayMs(
  failed: number,
  policy: RetryPolicy,
  random: () => number,
  retryAfterMs?: number,
): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, policy.maxDelayMs);
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** (failed - 1));
  return Math.floor(Math.max(0, Math.min(random(), 1)) * ceiling);
}

/** A real wait, cut short (rejecting) when `signal` aborts. */
export const realSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/**
 * What a call of `tool` may repeat: reads and idempotent tools their policy (or DEFAULT_RETRY); a write
 * or notify call that is not idempotent nothing, since a failed attempt may still have taken effect.
 */
export function retryPlanFor(tool: AnyTool): { retry: RetryPolicy; notRepeatable: boolean } {
  if (tool.effect === 'read' || tool.idempotent === true) {
    return { retry: tool.retry ?? DEFAULT_RETRY, notRepeatable: false };
  }
  return { retry: NO_RETRY, notRepeatable: true };
}
