import type { ResultStore } from '../loop/ports.js';

/**
 * A run's long tool results kept in memory (the runner has no Redis), bounded per run like the worker's
 * store (src/store/runs/result-store.ts): a text that would pass the run's bound is refused.
 */
export function memoryResultStore(): ResultStore {
  const texts = new Map<string, string>();
  return {
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
