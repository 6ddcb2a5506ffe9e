/**
 * Reads the audit stream (src/store/audit/audit-log.ts) between two instants. A stream entry's id starts with
 * the Redis server's clock in milliseconds when the entry was appended, i.e. right after the decision, so
 * XRANGE by id selects a time range without reading the rest of the stream.
 */
import type { StoreContext } from '../store/context.js';
import { decode } from '../store/decode.js';
import { type AuditEntry, auditEntrySchema, hashFromPairs } from '../store/index.js';

interface AuditRecord {
  /** The stream entry id, `<ms>-<seq>`. */
  id: string;
  entry: AuditEntry;
}

const PAGE = 500;

/** Entries appended from `fromMs` to `toMs` (both inclusive), oldest first, read a page at a time. */
export async function* auditBetween(
  ctx: StoreContext,
  fromMs: number,
  toMs: number,
): AsyncGenerator<AuditRecord, void, undefined> {
  // An id given as bare milliseconds means `<ms>-0` as a start and `<ms>-<max>` as an end.
  let start = String(Math.max(0, Math.floor(fromMs)));
  const end = String(Math.floor(toMs));
  for (;;) {
    const rows = await ctx.redis.xrange(ctx.keys.audit, start, end, 'COUNT', PAGE);
    for (const [id, fields] of rows) {
      yield {
        id,
        entry: decode(`audit entry ${id}`, { id }, () => auditEntrySchema.parse(hashFromPairs(fields))),
      };
    }
    const last = rows.at(-1);
    if (rows.length < PAGE || last === undefined) return;
    start = `(${last[0]}`; // exclusive start (Redis >= 6.2)
  }
}
