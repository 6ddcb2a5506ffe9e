import { LoopgateError, ToolTimeoutError } from './errors.js';
import { boundResult, errorResult } from './observation.js';
import type { AnyTool, Logger, Requester, ToolContext, ToolResult, VerifyResult } from './types.js';

export interface CallContext {
  runId: string;
  toolCallId: string;
  requester: Requester;
  logger: Logger;
}

/**
 * Runs `fn` with an abort signal that fires after `timeoutMs`. A tool that ignores the signal still
 * loses the race: the call is reported as a timeout, never as "no result".
 */
export async function withTimeout<T>(
  name: string,
  timeoutMs: number,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        const err = new ToolTimeoutError(name, timeoutMs);
        controller.abort(err);
        reject(err);
      },
      Math.max(0, timeoutMs),
    );
  });
  try {
    return await Promise.race([fn(controller.signal), expired]);
  } finally {
    clearTimeout(timer);
  }
}

export function toolContext(call: CallContext, signal: AbortSignal): ToolContext {
  return {
    signal,
    idempotencyKey: `${call.runId}:${call.toolCallId}`,
    runId: call.runId,
    toolCallId: call.toolCallId,
    requester: call.requester,
    logger: call.logger,
  };
}

function failure(tool: AnyTool, err: unknown): ToolResult {
  if (err instanceof ToolTimeoutError) {
    return errorResult(
      'timeout',
      `${tool.name} did not finish within ${err.timeoutMs} ms and was abandoned.`,
    );
  }
  if (err instanceof LoopgateError) return errorResult(err.code, err.message);
  const message = err instanceof Error ? err.message : String(err);
  return errorResult('tool_failed', `${tool.name} failed: ${message}`);
}

export interface Executed {
  result: ToolResult;
  /** The tool's own return value, for `verify`; undefined when it failed. */
  raw?: unknown;
  durationMs: number;
}

/** Executes one validated call; a throw or a timeout becomes an error result, never an exception. */
export async function executeCall(
  tool: AnyTool,
  args: unknown,
  call: CallContext,
  timeoutMs: number,
  maxObservationChars: number,
): Promise<Executed> {
  const started = performance.now();
  try {
    const raw = await withTimeout(tool.name, timeoutMs, (signal) =>
      tool.execute(args, toolContext(call, signal)),
    );
    return { result: boundResult(raw, maxObservationChars), raw, durationMs: performance.now() - started };
  } catch (err) {
    call.logger.warn({ err, tool: tool.name, toolCallId: call.toolCallId }, 'tool call failed');
    return { result: failure(tool, err), durationMs: performance.now() - started };
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
