import { DemoError } from './errors.js';

/**
 * Polls `probe` until it returns a value (not null, undefined or false) and resolves with it; after
 * `timeoutMs` it fails with a DemoError naming `what` was awaited.
 */
export async function waitUntil<T>(
  what: string,
  probe: () => T | null | undefined | false | Promise<T | null | undefined | false>,
  timeoutMs: number,
  intervalMs = 50,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null && value !== undefined && value !== false) return value;
    if (Date.now() > until) throw new DemoError(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
