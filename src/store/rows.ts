import type { z } from 'zod';

/**
 * Positional storage of flat records: a record is kept as the JSON array of its values in a fixed
 * field order (`{"toolCallId":"c1","ok":true}` -> `["c1",true]`), so list elements do not repeat their
 * field names. Optional fields come last in the order and are left out at the end of a row when absent.
 */
export interface RowShape<T extends object> {
  /** The field order of a row; optional fields last. */
  readonly fields: readonly (keyof T & string)[];
  /** Validates a record read back; strict, so a row with more values than fields is refused. */
  readonly schema: z.ZodType<T>;
}

/**
 * `record` as a row, or null when it cannot be one without losing something: a field the shape does
 * not name, or an absent field before a present one. Fields whose value is `undefined` count as absent
 * (JSON would drop them too).
 */
export function toRow<T extends object>(shape: RowShape<T>, record: T): unknown[] | null {
  const values = record as Record<string, unknown>;
  let present = 0;
  for (const key of Object.keys(values)) {
    if (values[key] === undefined) continue;
    if (!shape.fields.includes(key as keyof T & string)) return null;
    present++;
  }
  const row: unknown[] = [];
  for (const field of shape.fields) {
    const value = values[field];
    if (value === undefined) break;
    row.push(value);
  }
  return row.length === present ? row : null;
}

/** The record a row stands for, validated by the shape's schema (throws on a damaged row). */
export function fromRow<T extends object>(shape: RowShape<T>, row: readonly unknown[]): T {
  if (row.length > shape.fields.length) {
    throw new TypeError(`a row of ${row.length} values for ${shape.fields.length} fields`);
  }
  const record: Record<string, unknown> = {};
  row.forEach((value, i) => {
    record[shape.fields[i] as string] = value;
  });
  return shape.schema.parse(record);
}
