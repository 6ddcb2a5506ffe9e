import { LoopgateError, RunCancelledError, ToolFailure, ToolTimeoutError } from './errors.js';
import { cutLongText, type Kept } from './large-results.js';
import { boundResult, dataText } from './observation.js';
import type { Sleep } from './ports.js';
import { classifyFailure, retryDelayMs } from './retry.js';
import type { AnyTool, Logger, Requester, RetryPolicy, ToolContext, VerifyResult } from './tool-contract.js';
import type { RetriedAttempt, ToolResult } from './tool-result.js';

export interface CallContext {
  runId: string;
  toolCallId: string;
  threadId?: string;
  requester: Requester;
  logger: Logger;
}

/**
 * Runs `fn` with an abort signal that fires after `timeoutMs`, or when `cancel` aborts (the run was
 * cancelled: RunCancelledError). A tool that ignores the signal still loses the race: the call is
 * reported as a timeout or as cancelled, never as "no result".
 */
export async function withTimeout<T>(
  name: string,
  timeoutMs: number,
  fn: (signal: AbortSignal) => Promise<T>,
  cancel?: AbortSignal,
): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onCancel: (() => void) | undefined;
  const expired = new Promise<never>((_, reject) => {
    const stop = (err: Error) => {
      controller.abort(err);
      reject(err);
    };
    timer = setTimeout(() => stop(new ToolTimeoutError(name, timeoutMs)), Math.max(0, timeoutMs));
    if (cancel) {
      onCancel = () => stop(new RunCancelledError(name));
      if (cancel.aborted) onCancel();
      else cancel.addEventListener('abort', onCancel, { once: true });
    }
  });
  try {
    return await Promise.race([fn(controller.signal), expired]);
  } finally {
    clearTimeout(timer);
    if (onCancel) cancel?.removeEventListener('abort', onCancel);
  }
}

export function toolContext(call: CallContext, signal: AbortSignal): ToolContext {
  return {
    signal,
    idempotencyKey: `${call.runId}:${call.toolCallId}`,
    runId: call.runId,
    toolCallId: call.toolCallId,
    ...(call.threadId === undefined ? {} : { threadId: call.threadId }),
    requester: call.requester,
    logger: call.logger,
  };
}

function failure(tool: AnyTool, err: unknown, transient: boolean): ToolResult {
  const flag = transient ? { transient: true } : {};
  if (err instanceof ToolTimeoutError) {
    return {
      ok: false,
      error: {
        code: 'timeout',
        message: `${tool.name} did not finish within ${err.timeoutMs} ms and was abandoned.`,
        ...flag,
      },
    };
  }
  if (err instanceof LoopgateError)
    return { ok: false, error: { code: err.code, message: err.message, ...flag } };
  const message = err instanceof Error ? err.message : String(err);
  return { ok: false, error: { code: 'tool_failed', message: `${tool.name} failed: ${message}`, ...flag } };
}

interface Executed {
  result: ToolResult;
  /** The tool's own return value, for `verify`; undefined when it failed. */
  raw?: unknown;
  durationMs: number;
}

/** How one call is executed: per-attempt timeout, observation bound, and what may be retried. */
export interface CallLimits {
  /** Timeout of each attempt (lowered to what `timeLeftMs` allows). */
  timeoutMs: number;
  maxObservationChars: number;
  retry: RetryPolicy;
  /**
   * Set for a write or notify call that may not be repeated: a transient failure is reported with this
   * said, never retried.
   */
  notRepeatable?: boolean;
  /** Time left for every attempt and wait together (the run's deadline); absent: unbounded. */
  timeLeftMs?: () => number;
  /**
   * Aborts the attempt in flight and any wait before a retry: the run was cancelled (read calls only,
   * never an approved write). The result is a `cancelled` error.
   */
  cancel?: AbortSignal;
  sleep: Sleep;
  random: () => number;
  /** Told of each retry before its wait. Must not throw. */
  onRetry?: (attempt: RetriedAttempt) => void;
  /**
   * Keeps the whole text of a result longer than `maxObservationChars` for `read_result` (must not
   * throw); the model then reads whole lines and a handle. Absent: the result is only cut.
   */
  keep?: (text: string) => Promise<Kept>;
}

/** The result the model reads for a tool's return value, bounded to `maxObservationChars`. */
async function shapeResult(data: unknown, limits: CallLimits): Promise<ToolResult> {
  if (!limits.keep) return boundResult(data, limits.maxObservationChars);
  const text = dataText(data);
  if (text.length <= limits.maxObservationChars) return boundResult(data, limits.maxObservationChars);
  return cutLongText(text, limits.maxObservationChars, await limits.keep(text));
}

const NOT_REPEATABLE = 'not retried because it may not be safe to repeat';

/** A failure's own answer (ToolFailure `answer`), given as the result when no attempt does better. */
function answerOf(err: unknown): { value: unknown } | undefined {
  return err instanceof ToolFailure ? err.answer : undefined;
}

/** The last failure as the model reads it, with the attempts before it and why there was no other. */
function finalFailure(
  failed: ToolResult & { ok: false },
  attempts: readonly RetriedAttempt[],
  why: string | undefined,
): ToolResult {
  const tried = attempts.length > 0 ? ` (attempt ${attempts.length + 1}; each earlier one failed too)` : '';
  const message = `${failed.error.message}${tried}${why ? `; ${why}` : ''}`;
  return {
    ok: false,
    error: { ...failed.error, message },
    ...(attempts.length > 0 ? { attempts: [...attempts] } : {}),
  };
}

/** A successful result, listing the retried attempts before it. */
async function shaped(raw: unknown, limits: CallLimits, attempts: RetriedAttempt[]): Promise<ToolResult> {
  const bounded = await shapeResult(raw, limits);
  return attempts.length > 0 && bounded.ok ? { ...bounded, attempts } : bounded;
}

/** What follows a failed attempt: the call's final result, or another attempt after a wait. */
type AfterFailure = { final: Omit<Executed, 'durationMs'> } | { retry: RetriedAttempt };

/** Decides what follows attempt `n`, which threw `err`. */
async function afterFailure(
  tool: AnyTool,
  err: unknown,
  n: number,
  limits: CallLimits,
  attempts: RetriedAttempt[],
): Promise<AfterFailure> {
  const { transient, retryAfterMs } = classifyFailure(err);
  const failed = failure(tool, err, transient) as ToolResult & { ok: false };
  if (!transient) return { final: { result: finalFailure(failed, attempts, undefined) } };
  if (limits.notRepeatable) return { final: { result: finalFailure(failed, attempts, NOT_REPEATABLE) } };
  const delayMs = retryDelayMs(n, limits.retry, limits.random, retryAfterMs);
  const outOfTime = delayMs >= (limits.timeLeftMs?.() ?? Number.POSITIVE_INFINITY);
  if (n < limits.retry.attempts && !outOfTime) {
    return { retry: { attempt: n, code: failed.error.code, message: failed.error.message, delayMs } };
  }
  // The last attempt: the failure's own answer if it has one, else the failure.
  const answer = answerOf(err);
  if (answer) return { final: { result: await shaped(answer.value, limits, attempts), raw: answer.value } };
  const why =
    outOfTime && n < limits.retry.attempts
      ? 'not retried because the run has no time left for another attempt'
      : undefined;
  return { final: { result: finalFailure(failed, attempts, why) } };
}

/**
 * Executes one validated call; a throw or a timeout becomes an error result, never an exception. A
 * transient failure is tried again as `limits.retry` allows, waiting with backoff and jitter, while the
 * next attempt still fits in `limits.timeLeftMs`; every retried attempt is listed on the result.
 */
export async function executeCall(
  tool: AnyTool,
  args: unknown,
  call: CallContext,
  limits: CallLimits,
): Promise<Executed> {
  const started = performance.now();
  const attempts: RetriedAttempt[] = [];
  const elapsed = () => performance.now() - started;
  for (let n = 1; ; n++) {
    const left = limits.timeLeftMs?.() ?? Number.POSITIVE_INFINITY;
    let next: AfterFailure;
    try {
      const raw = await withTimeout(
        tool.name,
        Math.max(0, Math.min(limits.timeoutMs, left)),
        (signal) => tool.execute(args, toolContext(call, signal)),
        limits.cancel,
      );
      return { result: await shaped(raw, limits, attempts), raw, durationMs: elapsed() };
    } catch (err) {
      call.logger.warn({ err, tool: tool.name, toolCallId: call.toolCallId, attempt: n }, 'tool call failed');
      next = await afterFailure(tool, err, n, limits, attempts);
    }
    if ('final' in next) return { ...next.final, durationMs: elapsed() };
    attempts.push(next.retry);
    limits.onRetry?.(next.retry);
    try {
      await limits.sleep(next.retry.delayMs, limits.cancel);
    } catch {
      // Only a cancel cuts the wait short.
      return { result: failure(tool, new RunCancelledError(tool.name), false), durationMs: elapsed() };
    }
  }
}

/** Runs a tool's read-only verification after a successful write; a failing check is a result too. */
export async function verifyCall(
  tool: AnyTool,
  args: unknown,
  raw: unknown,
  call: CallContext,
  timeoutMs: number,
): Promise<VerifyResult | null> {
  const verify = tool.verify;
  if (!verify) return null;
  try {
    return await withTimeout(`${tool.name} verification`, timeoutMs, (signal) =>
      verify(args, raw, toolContext(call, signal)),
    );
  } catch (err) {
    return { ok: false, summary: `verification could not run: ${(err as Error).message}` };
  }
}

/** The card preview; a failing preview is shown as such rather than blocking the approval. */
export async function previewCall(
  tool: AnyTool,
  args: unknown,
  call: CallContext,
  timeoutMs: number,
): Promise<string | undefined> {
  const preview = tool.preview;
  if (!preview) return undefined;
  try {
    return await withTimeout(`${tool.name} preview`, timeoutMs, (signal) =>
      preview(args, toolContext(call, signal)),
    );
  } catch (err) {
    return `(preview unavailable: ${(err as Error).message})`;
  }
}
