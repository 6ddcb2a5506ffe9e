/**
 * One base class; each cause is a subclass carrying its context and a stable `code` that survives
 * crossing a boundary (job data, logs, Slack messages).
 */
export class LoopgateError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/**
 * The model could not be reached, refused the request, or answered unusably after the adapter's own
 * retries. A refusal (an HTTP answer) carries the server's own words in `serverMessage`; a server never
 * reached (connection, DNS, timeout) has no `status`.
 */
export class ModelError extends LoopgateError {
  readonly status: number | undefined;
  readonly retryable: boolean;
  /** The server refused the request as longer than the model's context window. */
  readonly contextExceeded: boolean;
  /** What the server said, secrets redacted; absent when no server answered. */
  readonly serverMessage: string | undefined;
  /** The server's error code (OpenAI's `error.code`), when it sent a string one. */
  readonly serverCode: string | undefined;
  constructor(
    message: string,
    opts: {
      status?: number;
      retryable: boolean;
      cause?: unknown;
      contextExceeded?: boolean;
      serverMessage?: string;
      serverCode?: string;
    },
  ) {
    super('model_error', message, { cause: opts.cause });
    this.status = opts.status;
    this.retryable = opts.retryable;
    this.contextExceeded = opts.contextExceeded === true;
    this.serverMessage = opts.serverMessage;
    this.serverCode = opts.serverCode;
  }

  /** The server answered and refused the request itself (4xx): asking again the same way will not help. */
  get refusedByServer(): boolean {
    return this.status !== undefined && this.status >= 400 && this.status < 500;
  }
}

/**
 * What people and the trace are told when a model request failed: a server's refusal in its own words
 * (status and message, secrets already redacted by the adapter), distinct from a server that could not be
 * reached at all (connection, DNS, timeout), which sends people looking at the network.
 */
export function modelFailureSentence(err: unknown): string {
  if (err instanceof ModelError && err.status !== undefined && err.serverMessage !== undefined) {
    return err.refusedByServer
      ? `The model server refused the request (HTTP ${err.status}): ${err.serverMessage}`
      : `The model server failed (HTTP ${err.status}): ${err.serverMessage}`;
  }
  return `The model could not be reached: ${err instanceof Error ? err.message : String(err)}`;
}

/**
 * A tool's failure with its class: `transient` when trying again may succeed (a timeout, a dropped or
 * refused connection, a temporary DNS failure, HTTP 429/502/503/504), else permanent (bad input,
 * permission, business rules). `retryAfterMs` is the server's Retry-After, when it sent one. Tools throw
 * it (or a subclass) so the engine knows what is safe to retry.
 *
 * `answer` (with `transient`) marks a reply worth reading that may change when asked again, such as a
 * health endpoint's 503 "degraded": it is retried like a transient failure, and when no attempt does
 * better it becomes the call's successful result (with the attempts listed), not an error.
 */
export class ToolFailure extends LoopgateError {
  readonly transient: boolean;
  readonly retryAfterMs: number | undefined;
  readonly answer: { value: unknown } | undefined;
  constructor(
    code: string,
    message: string,
    options: { transient?: boolean; retryAfterMs?: number; answer?: unknown; cause?: unknown } = {},
  ) {
    super(code, message, { cause: options.cause });
    this.transient = options.transient === true;
    this.retryAfterMs = options.retryAfterMs;
    this.answer = 'answer' in options ? { value: options.answer } : undefined;
  }
}

export class ToolTimeoutError extends LoopgateError {
  constructor(
    readonly toolName: string,
    readonly timeoutMs: number,
  ) {
    super('timeout', `${toolName} did not finish within ${timeoutMs} ms`);
  }
}

/** A read call abandoned because someone cancelled its run (EngineDeps.cancelSignal). */
export class RunCancelledError extends LoopgateError {
  constructor(readonly toolName: string) {
    super('cancelled', `${toolName} was abandoned: the run was cancelled`);
  }
}

/** A stored run in a format this version cannot read. */
export class RunStateVersionError extends LoopgateError {
  constructor(readonly found: unknown) {
    super('unsupported_run_version', `run state version ${String(found)} is not supported (expected 1)`);
  }
}

/** The engine was asked to do something the run's status does not allow. */
export class RunStatusError extends LoopgateError {
  constructor(
    readonly status: string,
    readonly operation: string,
  ) {
    super('bad_run_status', `cannot ${operation} a run whose status is ${status}`);
  }
}
