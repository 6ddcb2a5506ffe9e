/**
 * `{name}` placeholders in operator-written templates. Only `{identifier}` is a placeholder; any other
 * brace is literal text. Values are validated parameters; how they are escaped depends on where they go.
 */

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export type ParamValue = string | number | boolean;

export function placeholdersIn(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => m[1] ?? '');
}

/** Replaces each placeholder with `encode(value)`; a missing value is a programming error (schemas ran first). */
export function fill(
  template: string,
  values: Readonly<Record<string, ParamValue>>,
  encode: (value: string) => string = (v) => v,
): string {
  return template.replace(PLACEHOLDER, (_whole, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`no value for placeholder {${name}}`);
    return encode(String(value));
  });
}

/** `{name}` and nothing else: the whole string is one placeholder. */
function wholePlaceholder(template: string): string | undefined {
  const m = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(template);
  return m?.[1];
}

/** URL templates: values are percent-encoded, so they cannot add path segments, queries or fragments. */
export function fillUrl(template: string, values: Readonly<Record<string, ParamValue>>): string {
  return fill(template, values, encodeURIComponent);
}

/**
 * A path segment that URL resolution removes or climbs out of: `.` or `..`, also written with `%2e`
 * (the WHATWG URL parser treats `%2e` as a dot in exactly these segments).
 */
export function isDotSegment(segment: string): boolean {
  return /^(?:\.|%2e){1,2}$/i.test(segment);
}

/** The path part of a URL template, from its first `/` after the origin up to any `?` or `#`. */
export function pathOfUrlTemplate(template: string): string {
  const afterOrigin = template.replace(/^[a-z]+:\/\/[^/]*/i, '');
  return afterOrigin.split(/[?#]/, 1)[0] ?? '';
}

/** JSON body templates: `"{n}"` alone becomes the typed value; placeholders inside strings are text. */
export function fillJson(template: unknown, values: Readonly<Record<string, ParamValue>>): unknown {
  if (typeof template === 'string') {
    const whole = wholePlaceholder(template);
    if (whole !== undefined && values[whole] !== undefined) return values[whole];
    return fill(template, values);
  }
  if (Array.isArray(template)) return template.map((item) => fillJson(item, values));
  if (template !== null && typeof template === 'object') {
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, fillJson(v, values)]));
  }
  return template;
}

/** Every placeholder in a JSON template's strings (keys are never templates). */
export function placeholdersInJson(template: unknown): string[] {
  if (typeof template === 'string') return placeholdersIn(template);
  if (Array.isArray(template)) return template.flatMap(placeholdersInJson);
  if (template !== null && typeof template === 'object')
    return Object.values(template).flatMap(placeholdersInJson);
  return [];
}
