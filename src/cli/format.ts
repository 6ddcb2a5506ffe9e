/** Plain-text output helpers: aligned tables, UTC times, durations, shortened text. */
import type { Writable } from 'node:stream';

/** `2026-01-02 10:11:12Z`: UTC, since operators and servers rarely share a time zone. */
export function utc(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')}Z`;
}

/** `850 ms`, `4.2 s`, `3m 05s`, `2h 10m`. */
export function duration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const s = Math.round(ms / 1_000);
  if (s < 3_600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3_600)}h ${String(Math.floor((s % 3_600) / 60)).padStart(2, '0')}m`;
}

/** `in 12m 00s` or `3m 05s ago`, relative to `now`. */
export function relative(ms: number, now: number): string {
  return ms >= now ? `in ${duration(ms - now)}` : `${duration(now - ms)} ago`;
}

/** At most `max` characters on one line; longer text ends with `… (+N chars)`. */
export function shorten(text: string, max: number): string {
  const flat = text.replace(/\s*\n\s*/g, ' ⏎ ');
  return flat.length <= max ? flat : `${flat.slice(0, max)}… (+${flat.length - max} chars)`;
}

/** Columns padded to their widest cell; the last column is not padded. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** Writes and waits when the stream asks to (large exports piped into a slow reader). */
export async function write(stream: Writable, text: string): Promise<void> {
  if (stream.write(text)) return;
  await new Promise<void>((resolve, reject) => {
    const done = (error?: Error) => {
      stream.off('drain', done);
      stream.off('error', done);
      if (error) reject(error);
      else resolve();
    };
    stream.once('drain', done);
    stream.once('error', done);
  });
}

/** One JSON document, pretty-printed, for `--json`. */
export const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;
