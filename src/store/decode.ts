import { LoopgateError } from '../loop/errors.js';
import { StoreError, scriptError } from './errors.js';
import type { ScriptName } from './scripts.js';

/**
 * Decoding of what Redis returns. Script replies and stored records cross a boundary: anything not
 * shaped as expected becomes a `corrupt_record` StoreError naming what was being read.
 */

/** Runs `read`, turning any failure except a LoopgateError into `corrupt_record`. */
export function decode<T>(what: string, context: Record<string, unknown>, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof LoopgateError) throw error;
    throw new StoreError('corrupt_record', `cannot read ${what}: ${(error as Error).message}`, context, {
      cause: error,
    });
  }
}

/** A script reply that is either a negative code (thrown as StoreError) or an array. */
export function replyArray(script: ScriptName, reply: unknown, context: Record<string, unknown>): unknown[] {
  if (typeof reply === 'number') throw scriptError(script, reply, context);
  if (!Array.isArray(reply)) throw badReply(script, reply, context);
  return reply;
}

/** A script reply that is either a negative code (thrown as StoreError) or a number >= 0. */
export function replyCount(script: ScriptName, reply: unknown, context: Record<string, unknown>): number {
  if (typeof reply !== 'number') throw badReply(script, reply, context);
  if (reply < 0) throw scriptError(script, reply, context);
  return reply;
}

export function badReply(script: ScriptName, reply: unknown, context: Record<string, unknown>): StoreError {
  return new StoreError(
    'corrupt_record',
    `${script} returned an unexpected reply: ${JSON.stringify(reply)}`,
    {
      script,
      ...context,
    },
  );
}

/** A JSON array assembled from list elements that are each one JSON value (one parse, not n). */
export const parseJsonList = (elements: readonly unknown[]): unknown => JSON.parse(`[${elements.join(',')}]`);

const COMMA = 0x2c;

/**
 * Like parseJsonList for raw list elements: joined as bytes and decoded once, which is several times
 * faster than letting the client decode every element into a string.
 */
export function parseJsonBuffers(elements: readonly Buffer[]): unknown {
  let size = 2 + Math.max(0, elements.length - 1);
  for (const e of elements) size += e.length;
  const out = Buffer.allocUnsafe(size);
  out[0] = 0x5b; // [
  let at = 1;
  elements.forEach((e, i) => {
    if (i > 0) out[at++] = COMMA;
    at += e.copy(out, at);
  });
  out[at] = 0x5d; // ]
  return JSON.parse(out.toString('utf8'));
}
