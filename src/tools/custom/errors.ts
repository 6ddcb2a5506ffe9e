/**
 * Errors a custom tool throws to steer the model. Each carries a stable `code` the model reads with the
 * message; `transient` ones are retried within the tool's retry policy (never for a write that is not
 * idempotent).
 */
import { ToolFailure } from '../../loop/errors.js';

export { ToolFailure };

/** The arguments are well-formed but wrong (no such customer, a date in the past): the model should change them. */
export class ToolInputError extends ToolFailure {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('invalid_input', message, options);
  }
}

/** A temporary failure (the service is down, rate-limited): trying again later may succeed. */
export class TransientToolError extends ToolFailure {
  constructor(message: string, options: { retryAfterMs?: number; cause?: unknown } = {}) {
    super('temporarily_unavailable', message, { ...options, transient: true });
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object';

/**
 * The same failure as this copy of loopgate's class. A tool package imports its own copy of `loopgate`,
 * whose classes are not the running engine's: the engine keeps a failure's code and class only for its
 * own classes, so one from another copy is recognised by shape and rebuilt.
 */
export function sameCopyFailure(err: unknown): unknown {
  if (err instanceof ToolFailure || !(err instanceof Error) || !isRecord(err)) return err;
  const { code, transient, retryAfterMs, answer } = err as Record<string, unknown>;
  if (typeof code !== 'string' || typeof transient !== 'boolean') return err;
  const rebuilt = new ToolFailure(code, err.message, {
    transient,
    ...(typeof retryAfterMs === 'number' ? { retryAfterMs } : {}),
    ...(isRecord(answer) && 'value' in answer ? { answer: answer.value } : {}),
    cause: err,
  });
  return rebuilt;
}
