import type { CallLimits } from '../../src/loop/execute.js';
import { NO_RETRY, realSleep } from '../../src/loop/retry.js';

/** Limits of one tool call outside a run: its timeout and result bound, no retries. */
export function callLimits(timeoutMs: number, maxObservationChars: number): CallLimits {
  return { timeoutMs, maxObservationChars, retry: NO_RETRY, sleep: realSleep, random: Math.random };
}
