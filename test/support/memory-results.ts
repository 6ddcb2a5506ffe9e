import type { ContextLimits } from '../../src/loop/context-window.js';
import type { ResultStore } from '../../src/loop/ports.js';

/** Context limits for engine tests: a window far larger than any test conversation unless overridden. */
export function contextLimits(overrides: Partial<ContextLimits> = {}): ContextLimits {
  return {
    windowTokens: 1_000_000,
    compactAtPercent: 70,
    summaryTokens: 400,
    maxStoredResultBytes: 1_000_000,
    maxStoredBytesPerRun: 4_000_000,
    ...overrides,
  };
}

/** A ResultStore in memory, bounding the run's kept bytes like the Redis one. */
export function memoryResultStore(): ResultStore & { texts: Map<string, string> } {
  const texts = new Map<string, string>();
  return {
    texts,
    async keep(handle, text, maxRunBytes) {
      let total = Buffer.byteLength(text);
      for (const [h, t] of texts) if (h !== handle) total += Buffer.byteLength(t);
      if (total > maxRunBytes)
        return { kept: false, reason: `this run's kept results would pass ${maxRunBytes} bytes` };
      texts.set(handle, text);
      return { kept: true };
    },
    async read(handle) {
      return texts.get(handle) ?? null;
    },
  };
}
