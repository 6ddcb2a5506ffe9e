import { z } from 'zod';
import type { Grant } from '../../policy/grants.js';
import type { StoreContext } from '../context.js';
import { decode } from '../decode.js';
import { type ApprovalRecord, approvalStatusSchema, hashFromPairs } from '../records.js';

/** What an audit entry records: a decision (the default, and all entries before rules existed) or another event. */
export const auditEventSchema = z.enum([
  'decision',
  /** One approval towards a quorum that is not reached yet. */
  'vote',
  /** An approver edited the arguments: `argsHash` the old round's, `editedArgsHash` the new one's. */
  'edit',
  'reminder',
  'escalation',
  /** A grant was created ("Approve and allow similar calls") or revoked. */
  'grant',
  'grant_revoked',
  /** A call in shadow mode was shown and not executed (its approval record is closed at once). */
  'shadow',
  /** Someone clicked Would approve / Would reject on a shadow card: `note` says which. */
  'shadow_decision',
  /**
   * An approved call's plan changed before it ran: it did not run and a new round asks again. `note`
   * holds the approved and the current plan's hashes.
   */
  'plan_changed',
  /**
   * A run's ask for more budget was answered (../budget/budget-ask-store.ts): `tool` is `budget:<stop reason>`,
   * `approvalId` `<runId>.budget.<round>`, `note` the offer (JSON); approved means granted.
   */
  'budget_extension',
]);
export type AuditEvent = z.infer<typeof auditEventSchema>;

const text = z.string().default('');

/** One decision or approval event, as kept in the audit stream. Empty strings mean "none". */
export const auditEntrySchema = z.strictObject({
  approvalId: z.string(),
  runId: z.string(),
  tool: z.string(),
  argsHash: z.string(),
  requester: z.string(),
  /** Slack user id of the decider; '' when the system or a rule decided. For a grant: its approver. */
  decider: z.string(),
  /** '' for events that decide nothing (reminder, escalation, grant, grant_revoked). */
  decision: z.union([approvalStatusSchema.exclude(['pending']), z.literal('')]),
  reason: z.string(),
  requestedAt: z.coerce.number(),
  decidedAt: z.coerce.number(),
  /** Link to the approval card or thread, when the caller knows it. */
  permalink: z.string(),
  event: auditEventSchema.default('decision'),
  /** `rule` (an allow or deny rule decided) or `grant` (a grant approved it); '' for a person or the system. */
  via: text,
  /** The rule that matched the call: `rule 2 of run_action (prod restarts)`. */
  rule: text,
  /** The channel rule whose approvers replaced the rule's (per-channel permissions), else ''. */
  approversFrom: text,
  /** Quorum progress after this event: `1/2`. */
  quorum: text,
  /** Who has approved so far, comma-separated. */
  votes: text,
  grantId: text,
  /** On an edit: the hash of the edited arguments (the new round's). */
  editedArgsHash: text,
  /** On a decision of an edited round: the hash of the model's own arguments. */
  originalArgsHash: text,
  /** Free text: who was reminded or added, what a grant covers. */
  note: text,
  /** `true` on a decision taken by breaking glass (a deny rule overridden for one call), else ''. */
  breakGlass: text,
  /** The incident reference given when breaking glass. */
  incident: text,
  /** `false` on a break-glass decision: flagged for review; '' on every other entry. */
  reviewed: text,
});
export type AuditEntry = z.infer<typeof auditEntrySchema>;

/** What the audit keeps of an answered budget ask (../budget/budget-ask-store.ts's record). */
export interface AnsweredBudgetAsk {
  runId: string;
  round: number;
  reason: string;
  requester: string;
  status: string;
  offer: object;
  createdAt: number;
  decidedBy?: string | undefined;
  decidedAt?: number | undefined;
}

export interface AuditExtra {
  event?: AuditEvent;
  decider?: string;
  note?: string;
  grantId?: string;
  editedArgsHash?: string;
  at?: number;
}

/** The fields every entry about `record` shares. */
function entryOf(record: ApprovalRecord, permalink: string | undefined): AuditEntry {
  const votes = record.votes ?? [];
  const quorum = record.quorum ?? 1;
  return {
    approvalId: record.approvalId,
    runId: record.runId,
    tool: record.tool,
    argsHash: record.argsHash,
    requester: record.requester,
    decider: record.decidedBy ?? '',
    decision: record.status === 'pending' ? '' : record.status,
    reason: record.decisionReason ?? '',
    requestedAt: record.createdAt,
    decidedAt: record.decidedAt ?? 0,
    permalink: permalink ?? '',
    event: 'decision',
    via: record.via ?? '',
    rule: record.rule ?? '',
    approversFrom: record.approversFrom ?? '',
    quorum: quorum > 1 ? `${votes.length}/${quorum}` : '',
    votes: votes.map((v) => v.by).join(','),
    grantId: record.grantId ?? '',
    editedArgsHash: '',
    originalArgsHash: record.original?.argsHash ?? '',
    note: '',
    breakGlass: '',
    incident: '',
    reviewed: '',
  };
}

/**
 * The audit log: an append-only Redis stream of decisions and approval events (votes, edits, reminders,
 * escalations, grants), capped near `auditMaxLength` entries (XADD MAXLEN ~). The stream is one key
 * shared by all runs, so it is written right after the change's compare-and-set, not inside it: a process
 * dying between the two loses that entry (the approval record itself still holds who decided what and when).
 */
export class AuditLog {
  constructor(private readonly ctx: StoreContext) {}

  /**
   * Appends the decision recorded on `record`; returns the stream entry id. `breakGlass`: the decision
   * broke glass, so the entry carries the incident and is flagged for review.
   */
  async appendDecision(
    record: ApprovalRecord,
    permalink?: string,
    breakGlass?: { incident: string },
  ): Promise<string> {
    if (record.status === 'pending') throw new TypeError(`approval ${record.approvalId} is not decided`);
    if (breakGlass) {
      const flagged = { breakGlass: 'true', incident: breakGlass.incident, reviewed: 'false' };
      return this.append({ ...entryOf(record, permalink), ...flagged });
    }
    // A shadow call decides nothing: it is its own event, so readers of decisions (replay) never count it.
    if (record.via === 'shadow')
      return this.append({ ...entryOf(record, permalink), event: 'shadow', decision: '' });
    return this.append(entryOf(record, permalink));
  }

  /** Appends an event about `record` that is not (only) its decision: a vote, an edit, a reminder… */
  async appendEvent(record: ApprovalRecord, extra: AuditExtra & { event: AuditEvent }, permalink?: string) {
    const base = entryOf(record, permalink);
    return this.append({
      ...base,
      event: extra.event,
      decision: extra.event === 'vote' ? 'approved' : extra.event === 'edit' ? 'superseded' : '',
      decider: extra.decider ?? (extra.event === 'vote' ? '' : base.decider),
      decidedAt: extra.at ?? base.decidedAt,
      note: extra.note ?? '',
      grantId: extra.grantId ?? base.grantId,
      editedArgsHash: extra.editedArgsHash ?? '',
    });
  }

  /** Appends a grant's creation or revocation (`decider`: who granted or revoked it). */
  async appendGrant(
    grant: Grant,
    event: 'grant' | 'grant_revoked',
    decider: string,
    at: number,
  ): Promise<string> {
    const values = Object.entries(grant.values)
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join(', ');
    return this.append({
      ...auditEntrySchema.parse({
        approvalId: grant.approvalId,
        runId: grant.runId,
        tool: grant.tool,
        argsHash: '',
        requester: '',
        decider,
        decision: '',
        reason: '',
        requestedAt: grant.grantedAt,
        decidedAt: at,
        permalink: '',
      }),
      event,
      rule: grant.rule,
      grantId: grant.grantId,
      note: `${values} in ${grant.scope} ${grant.scope === 'run' ? grant.runId : `${grant.channelId}/${grant.threadTs}`} until ${new Date(grant.expiresAt).toISOString()}`,
    });
  }

  /** Appends the answer to a run's ask for more budget (granted, refused, expired or cancelled). */
  async appendBudgetAnswer(record: AnsweredBudgetAsk): Promise<string> {
    if (record.status === 'pending') throw new TypeError(`the budget ask of ${record.runId} is not answered`);
    const decision =
      record.status === 'granted' ? 'approved' : record.status === 'refused' ? 'rejected' : record.status;
    return this.append({
      ...auditEntrySchema.parse({
        approvalId: `${record.runId}.budget.${record.round}`,
        runId: record.runId,
        tool: `budget:${record.reason}`,
        argsHash: '',
        requester: record.requester,
        decider: record.decidedBy ?? '',
        decision,
        reason: '',
        requestedAt: record.createdAt,
        decidedAt: record.decidedAt ?? 0,
        permalink: '',
      }),
      event: 'budget_extension',
      note: JSON.stringify(record.offer),
    });
  }

  private async append(entry: AuditEntry): Promise<string> {
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
