import { z } from 'zod';
import type { StoreContext } from './context.js';
import { decode } from './decode.js';
import { type ApprovalRecord, approvalStatusSchema, hashFromPairs } from './records.js';

/** One decision, as kept in the audit stream. Empty strings mean "none". */
export const auditEntrySchema = z.strictObject({
  approvalId: z.string(),
  runId: z.string(),
  tool: z.string(),
  argsHash: z.string(),
  requester: z.string(),
  /** Slack user id of the decider; '' when the system decided (expiry). */
  decider: z.string(),
  decision: approvalStatusSchema.exclude(['pending']),
  reason: z.string(),
  requestedAt: z.coerce.number(),
  decidedAt: z.coerce.number(),
  /** Link to the approval card or thread, when the caller knows it. */
  permalink: z.string(),
});
export type AuditEntry = z.infer<typeof auditEntrySchema>;

/**
 * The audit log: an append-only Redis stream of decisions, capped near `auditMaxLength` entries
 * (XADD MAXLEN ~). The stream is one key shared by all runs, so it is written right after the
 * decision's compare-and-set, not inside it: a process dying between the two loses that entry (the
 * approval record itself still holds who decided what and when).
 */
export class AuditLog {
  constructor(private readonly ctx: StoreContext) {}

  /** Appends the decision recorded on `record`; returns the stream entry id. */
  async appendDecision(record: ApprovalRecord, permalink?: string): Promise<string> {
    if (record.status === 'pending') throw new TypeError(`approval ${record.approvalId} is not decided`);
    const entry: AuditEntry = {
      approvalId: record.approvalId,
      runId: record.runId,
      tool: record.tool,
      argsHash: record.argsHash,
      requester: record.requester,
      decider: record.decidedBy ?? '',
      decision: record.status,
      reason: record.decisionReason ?? '',
      requestedAt: record.createdAt,
      decidedAt: record.decidedAt ?? 0,
      permalink: permalink ?? '',
    };
    const id = await this.ctx.redis.xadd(
      this.ctx.keys.audit,
      'MAXLEN',
      '~',
      this.ctx.options.auditMaxLength,
      '*',
      ...Object.entries(entry).flatMap(([field, value]) => [field, String(value)]),
    );
    if (id === null) throw new Error('XADD returned no id');
    return id;
  }

  /** The newest entries first, up to `count`. */
  async recent(count = 50): Promise<Array<{ id: string; entry: AuditEntry }>> {
    const rows = await this.ctx.redis.xrevrange(this.ctx.keys.audit, '+', '-', 'COUNT', count);
    return rows.map(([id, fields]) => ({
      id,
      entry: decode(`audit entry ${id}`, { id }, () => auditEntrySchema.parse(hashFromPairs(fields))),
    }));
  }
}
