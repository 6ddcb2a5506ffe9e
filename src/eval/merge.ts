/** Plain-data helpers of the suite files: merging a task's keys over the suite's, filling placeholders. */

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * `patch` over `base`: objects are merged key by key at every depth, anything else (lists included) is
 * replaced, and a `null` in the patch removes the key (a task can switch off a tool of the suite's policy).
 */
export function deepMerge(base: unknown, patch: unknown): unknown {
  if (!isObject(base) || !isObject(patch)) return patch === undefined ? base : patch;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = deepMerge(base[key], value);
  }
  return out;
}

/** Replaces `${NAME}` in every string of `value` (at any depth) by `values[NAME]`; others stay as they are. */
export function fillPlaceholders<T>(value: T, values: Readonly<Record<string, string>>): T {
  const fill = (v: unknown): unknown => {
    if (typeof v === 'string')
      return v.replace(/\$\{([A-Z_]+)\}/g, (all, name: string) => values[name] ?? all);
    if (Array.isArray(v)) return v.map(fill);
    if (isObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x)]));
    return v;
  };
  return fill(value) as T;
}

/**
 * True when `actual` contains `expected`: objects key by key (extra keys in `actual` are fine), lists
 * element by element with equal lengths, anything else equal.
 */
export function contains(actual: unknown, expected: unknown): boolean {
  if (isObject(expected)) {
    return isObject(actual) && Object.entries(expected).every(([k, v]) => contains(actual[k], v));
  }
  if (Array.isArray(expected)) {
    return (
      Array.isArray(actual) &&
      actual.length === expected.length &&
      expected.every((v, i) => contains(actual[i], v))
    );
  }
  return Object.is(actual, expected);
}
