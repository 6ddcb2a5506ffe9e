/**
 * A model port over several: the primary first, then each fallback in order, when the one before fails
 * in a way another model may not (after that port's own retries): a retryable ModelError (5xx, 429,
 * timeouts, unreachable server) or an unusable reply. An aborted request (the run's deadline) and errors
 * a request would meet anywhere (400, 401, …) are not passed on. The reply names the model that answered.
 */
import { ModelError } from './errors.js';
import type { ModelPort, ModelReply, ModelRequest } from './model-port.js';

interface NamedModel {
  /** The model asked for, as the trace and metrics name it. */
  name: string;
  port: ModelPort;
}

interface FallbackOptions {
  /** Told each time a model failed and the next one is asked. Must not throw. */
  onFallback?: (failed: string, next: string, error: ModelError) => void;
}

function asModelError(err: unknown): ModelError {
  if (err instanceof ModelError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new ModelError(message, { retryable: true, cause: err });
}

/**
 * Whether the next model is worth asking after `err`: not when the request was aborted, nor after an
 * HTTP answer that says the request itself is wrong (a non-retryable status); yes otherwise.
 */
function worthFallingBack(err: ModelError, signal: AbortSignal): boolean {
  if (signal.aborted) return false;
  return err.status === undefined || err.retryable;
}

/**
 * The error the last model asked ends with: its own when it was the only one asked, else one that lists
 * each model's failure in turn and otherwise says what the last one's did.
 */
function finalError(failures: readonly string[], name: string, err: ModelError): ModelError {
  if (failures.length === 0) return err;
  return new ModelError(`${[...failures, `${name}: ${err.message}`].join('; then ')}`, {
    ...(err.status === undefined ? {} : { status: err.status }),
    retryable: err.retryable,
    contextExceeded: err.contextExceeded,
    ...(err.serverMessage === undefined ? {} : { serverMessage: err.serverMessage }),
    ...(err.serverCode === undefined ? {} : { serverCode: err.serverCode }),
    cause: err,
  });
}

export function fallbackModel(models: readonly NamedModel[], options: FallbackOptions = {}): ModelPort {
  const [primary] = models;
  if (!primary) throw new TypeError('fallbackModel needs at least one model');
  if (models.length === 1) return primary.port;
  return {
    model: primary.port.model ?? primary.name,
    async complete(request: ModelRequest): Promise<ModelReply> {
      const failures: string[] = [];
      for (const [i, m] of models.entries()) {
        try {
          return await m.port.complete(request);
        } catch (raw) {
          const err = asModelError(raw);
          const next = models[i + 1];
          if (!next || !worthFallingBack(err, request.signal)) throw finalError(failures, m.name, err);
          failures.push(`${m.name}: ${err.message}`);
          options.onFallback?.(m.name, next.name, err);
        }
      }
      throw new Error('unreachable: the last model either answered or threw');
    },
  };
}
