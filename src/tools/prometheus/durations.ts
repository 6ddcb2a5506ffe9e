/** Prometheus-style durations (`30s`, `5m`, `6h`, `2d`, `1w`) in seconds. */

const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 } as const;

export const DURATION = /^(\d{1,6})([smhdw])$/;

export function durationSeconds(text: string): number {
  const m = DURATION.exec(text);
  if (!m?.[1] || !m[2]) throw new Error(`not a duration: ${text}`);
  return Number(m[1]) * UNIT_SECONDS[m[2] as keyof typeof UNIT_SECONDS];
}

/** A step giving about `points` samples over `seconds`, at least 1 s, rounded to whole seconds. */
export function defaultStep(seconds: number, points = 120): number {
  return Math.max(1, Math.ceil(seconds / points));
}
