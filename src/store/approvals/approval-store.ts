import { randomUUID } from 'node:crypto';
import { mergeApprovers } from '../../approvers/approvers.js';
import { sourceLabel } from '../../approvers/oncall/source.js';
import type { CallPlan, GatedCall } from '../../loop/gated-calls.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { StoreContext } from '../context.js';
import { badReply, decode, replyArray } from '../decode.js';
import { StoreError, scriptError } from '../errors.js';
import { approvalIdFor, nextRoundOf, runIdOf } from '../ids.js';
import {
  type ApprovalDecision,
  type ApprovalRecord,
  type Approvers,
  approvalFromHash,
  approvalStatusSchema,
  approvalToHash,
  approversSchema,
  hashFromPairs,
} from '../records.js';
import { scriptWithWait } from '../replicated.js';
import { planRound } from './plan-round.js';

/** The decision reason of a round created by "Approve again". */
export const REAPPROVE_REASON = 'approved again after an unknown outcome';

/** The decision reason of a round created by "Retry" after a transient failure that was not repeated. */
export const RETRY_REASON = 'retried after a transient failure';

/** What the policy adds to a new approval (src/policy/gate.ts decides it); every field optional. */
export type ApprovalPolicyFields = Pick<
  ApprovalRecord,
  | 'rule'
  | 'approversFrom'
  | 'quorum'
  | 'selfApproval'
  | 'grantOffer'
  | 'schema'
  | 'remindAtPercent'
  | 'escalation'
  | 'breakGlass'
>;

export interface NewApproval {
  call: GatedCall;
  approvers: Approvers;
  expiresAt: number;
  /** > 1 when the call is asked again (e.g. after `outcome_unknown`); see approvalIdFor. Default 1. */
  round?: number;
  policy?: ApprovalPolicyFields;
  /**
   * Decided as it is created, without a click: approved by an `allow` rule or a grant (its ledger entry
   * opens at once), or rejected by a `deny` rule. Audited like a click.
   */
  decided?: {
    status: 'approved' | 'rejected';
    /** `shadow`: closed as not executed (status `rejected`), the shadow card asks what people would do. */
    via: 'rule' | 'grant' | 'shadow';
    /** The grant's approver, for `via: grant`. */
    by?: string;
    reason: string;
    grantId?: string;
  };
}

export interface CreateApprovalsInput {
  runId: string;
  fence: number;
  /** Slack user id of the person who asked for the run. */
  requester: string;
  now: number;
  approvals: readonly NewApproval[];
  /** The sub-agent whose run asks (absent: the person's own run). */
  agent?: string;
}

export interface DecideInput {
  approvalId: string;
  decision: ApprovalDecision;
  /** Slack user id of the decider; omit for system decisions (expiry, cancellation by the system). */
  decidedBy?: string;
  reason?: string;
  now: number;
  /** Link to the card or thread, kept in the audit log. */
  permalink?: string;
  /** A person's approval counts against this quorum instead of the stored one (the rule in force changed). */
  quorum?: number;
  /** The decision breaks glass: its audit entry carries the incident and is flagged for review. */
  breakGlass?: { incident: string };
}

export interface DecideResult {
  record: ApprovalRecord;
  /** This call moved the approval out of `pending` (to its decision, or to `expired` when too late). */
  changed: boolean;
  /** This call's decision is the one recorded. */
  won: boolean;
  /**
   * For an approval that needs a quorum: `counted` when this approval was counted (`won` says whether it
   * completed the quorum), `repeated` when this person had approved already (nothing changed).
   */
  vote: 'counted' | 'repeated' | null;
}

/**
 * Approval records, one per gated call, changed only by compare-and-set (first decision wins). The
 * pending-approvals index (by expiry) lives outside the runs' hash slots and is updated right after
 * each change; readers skip entries whose approval is no longer pending.
 */
export class ApprovalStore {
  constructor(
    private readonly ctx: StoreContext,
    private readonly audit: AuditLog,
  ) {}

  /**
   * Stores the approvals of one pause at once (lease holder only: throws `lease_lost` / `stale_fence`).
   * Idempotent: records that exist are kept as they are. Returns the stored records, in input order.
   *
   * One round trip: the pending-approvals index (another slot) is written beside the script, sent right
   * after it on the same connection (on a Cluster, to the index's node at the same time), with ZADD NX
   * so a record that already existed keeps its score. Only when the script finds records that already
   * existed (a redelivered pause) is the index corrected from them afterwards. A refused script leaves
   * index entries without a record, which readers drop.
   */
  async createApprovals(input: CreateApprovalsInput): Promise<ApprovalRecord[]> {
    const keys = this.ctx.keys.run(input.runId);
    const records = input.approvals.map(
      (a): ApprovalRecord => ({
        approvalId: approvalIdFor(input.runId, a.call.toolCallId, a.round),
        runId: input.runId,
        toolCallId: a.call.toolCallId,
        tool: a.call.tool,
        effect: a.call.effect,
        argsHash: a.call.argsHash,
        args: a.call.args,
        preview: a.call.preview ?? null,
        ...(a.call.plan ? { plan: a.call.plan } : {}),
        reason: a.call.reason ?? null,
        idempotent: a.call.idempotent,
        requester: input.requester,
        approvers: approversSchema.parse(a.approvers),
        createdAt: input.now,
        expiresAt: a.expiresAt,
        status: a.decided?.status ?? 'pending',
        decidedBy: a.decided?.by ?? null,
        decidedAt: a.decided ? input.now : null,
        decisionReason: a.decided?.reason ?? null,
        card: null,
        ...a.policy,
        ...(a.decided ? { via: a.decided.via } : {}),
        ...(a.decided?.grantId ? { grantId: a.decided.grantId } : {}),
        ...(input.agent ? { agent: input.agent } : {}),
      }),
    );
    if (records.length === 0) return [];
    const args: (string | number)[] = [input.fence, keys.base];
    for (const record of records) {
      const fields = approvalToHash(record);
      args.push(record.approvalId, fields.length, ...fields);
    }
    const context = { runId: input.runId, fence: input.fence };
    const pending = records.filter((r) => r.status === 'pending');
    const [reply] = await Promise.all([
      this.ctx.script('createApprovals', [keys.header, keys.lease, keys.approvals], args),
      pending.length > 0
        ? this.ctx.redis.zadd(
            this.ctx.keys.pendingApprovals,
            'NX',
            ...pending.flatMap((r) => [r.expiresAt, r.approvalId]),
          )
        : 0,
    ]);
    const entries = replyArray('createApprovals', reply, context).map((entry) => {
      const [created, ...pairs] = Array.isArray(entry) ? entry : [];
      const id = String(pairs[1] ?? '');
      const record = decode(`approval ${id}`, { approvalId: id, ...context }, () =>
        approvalFromHash(hashFromPairs(pairs)),
      );
      return { created: created === 1, record };
    });
    const existed = entries.filter((e) => !e.created).map((e) => e.record);
    if (existed.length > 0) await this.reindex(existed);
    const decided = entries.filter((e) => e.created && e.record.status !== 'pending');
    for (const { record } of decided) await this.audit.appendDecision(record);
    return entries.map((e) => e.record);
  }

  /**
   * Records a decision if the approval is still pending (first decision wins); a decision at or after
   * `expiresAt` expires it instead. Every change is appended to the audit log. Throws `not_found`, or
   * `run_ended` for an approve or reject of a pending approval whose run has ended (checked in the same
   * script as the decision, so a click between a run's final save and the cancelling of its approvals
   * cannot record an approval that nothing will run).
   *
   * With `waitReplicas` > 0, a person's decision (approved/rejected) counts only once that many replicas
   * have it (Redis WAIT): otherwise it is withdrawn (the approval is pending again, nothing audited) and
   * `durability_unconfirmed` is thrown, so no card shows a decision a failover could forget. A decision
   * whose call a worker already began executing stands.
   */
  async decide(input: DecideInput): Promise<DecideResult> {
    const { approvalId } = input;
    const decision = approvalStatusSchema.exclude(['pending']).parse(input.decision);
    const keys = [
      this.ctx.keys.approval(approvalId),
      this.ctx.keys.ledger(approvalId),
      this.ctx.keys.run(runIdOf(approvalId)).header,
    ];
    const nonce = randomUUID();
    const args = [decision, input.decidedBy ?? '', input.reason ?? '', input.now, nonce, input.quorum ?? ''];
    const byPerson = decision === 'approved' || decision === 'rejected';
    const { reply, confirmed, replicas } = byPerson
      ? await scriptWithWait(this.ctx, 'decideApproval', keys, args)
      : { reply: await this.ctx.script('decideApproval', keys, args), confirmed: true, replicas: 0 };
    const [changed, won, voted, ...pairs] = replyArray('decideApproval', reply, { approvalId });
    const record = decode(`approval ${approvalId}`, { approvalId }, () =>
      approvalFromHash(hashFromPairs(pairs)),
    );
    const vote = voted === 1 ? 'counted' : voted === 2 ? 'repeated' : null;
    if ((won === 1 || vote === 'counted') && !confirmed) {
      const withdrawn = await this.ctx.script('withdrawDecision', keys.slice(0, 2), [nonce]);
      if (withdrawn === 1) throw this.unconfirmed(approvalId, replicas);
    }
    if (changed === 1) {
      await Promise.all([
        this.ctx.redis.zrem(this.ctx.keys.pendingApprovals, approvalId),
        // Only the winning break-glass decision is flagged (a late one that expired the round is not).
        this.audit.appendDecision(record, input.permalink, won === 1 ? input.breakGlass : undefined),
      ]);
    } else if (vote === 'counted') {
      await this.audit.appendEvent(
        record,
        { event: 'vote', decider: input.decidedBy ?? '', at: input.now },
        input.permalink,
      );
    }
    return { record, changed: changed === 1, won: won === 1, vote };
  }

  /**
   * "Approve again" after an unknown outcome: creates the next round of `approvalId`'s call, with the same
   * arguments, approved with the same quorum as the earlier round. With quorum 1, `decidedBy`'s click
   * approves it (first click wins: `won` is false when the round was approved already). With a larger
   * quorum each distinct approver's click is counted (`vote: 'counted'`, or `'repeated'` for the same
   * person again) and the last one needed approves it (`won`); a collection not completed within the
   * earlier round's time starts again. Audited like any decision and vote. Also "Retry" of a call whose
   * approved run failed transiently and was not repeated (the ledger's result is transient). Throws
   * `not_found`, or `not_unknown` when the earlier round's outcome is known and not a transient failure,
   * and it was not left unstarted (or it is still only approved). With `waitReplicas` > 0 the click counts
   * only once that many replicas have it, like `decide`: else it is withdrawn and `durability_unconfirmed`
   * is thrown.
   */
  async reapprove(input: {
    approvalId: string;
    decidedBy: string;
    now: number;
    permalink?: string;
  }): Promise<{ record: ApprovalRecord; won: boolean; vote: 'counted' | 'repeated' | null }> {
    const { approvalId } = input;
    const next = nextRoundOf(approvalId);
    const keys = [
      this.ctx.keys.approval(approvalId),
      this.ctx.keys.ledger(approvalId),
      this.ctx.keys.approval(next),
      this.ctx.keys.ledger(next),
      this.ctx.keys.run(runIdOf(approvalId)).approvals,
    ];
    const nonce = randomUUID();
    const { reply, confirmed, replicas } = await scriptWithWait(this.ctx, 'reapproveCall', keys, [
      input.decidedBy,
      input.now,
      nonce,
      next,
      REAPPROVE_REASON,
      RETRY_REASON,
    ]);
    const [won, voted, ...pairs] = replyArray('reapproveCall', reply, { approvalId });
    const record = decode(`approval ${next}`, { approvalId: next }, () =>
      approvalFromHash(hashFromPairs(pairs)),
    );
    const vote = voted === 1 ? 'counted' : voted === 2 ? 'repeated' : null;
    if ((won === 1 || vote === 'counted') && !confirmed) {
      const withdrawn = await this.ctx.script('withdrawReapproval', keys.slice(2), [nonce, next]);
      if (withdrawn === 1) throw this.unconfirmed(next, replicas);
    }
    if (won === 1) await this.audit.appendDecision(record, input.permalink);
    else if (vote === 'counted') {
      await this.audit.appendEvent(
        record,
        { event: 'vote', decider: input.decidedBy, at: input.now },
        input.permalink,
      );
    }
    return { record, won: won === 1, vote };
  }

  /**
   * An approver edited a pending call's arguments: stores `next` (built by the caller: the edited
   * arguments and hash, the policy's ask for them, votes, or already approved) as the approval's next
   * round, and marks the edited round `superseded` (it points at the new one; the card stays). The first
   * edit wins. Throws `not_found`, `not_pending`, `edited_already`, `expired`, `run_ended`. With
   * `waitReplicas` > 0 the edit counts only once that many replicas have it, like `decide`: else it is
   * undone and `durability_unconfirmed` is thrown. Audited as an edit (both hashes), then, for a round
   * approved or voted on as it was made, as that decision or vote.
   */
  async edit(input: {
    approvalId: string;
    editedBy: string;
    now: number;
    next: ApprovalRecord;
    permalink?: string;
  }): Promise<ApprovalRecord> {
    const { approvalId, next } = input;
    if (next.approvalId !== nextRoundOf(approvalId)) throw new TypeError('the edit must be the next round');
    const runKeys = this.ctx.keys.run(runIdOf(approvalId));
    const keys = [
      this.ctx.keys.approval(approvalId),
      this.ctx.keys.approval(next.approvalId),
      this.ctx.keys.ledger(next.approvalId),
      runKeys.header,
      runKeys.approvals,
    ];
    const nonce = randomUUID();
    const fields = approvalToHash(next);
    const reason = `edited by <@${input.editedBy}>`;
    const { reply, confirmed, replicas } = await scriptWithWait(this.ctx, 'editApproval', keys, [
      input.editedBy,
      input.now,
      nonce,
      next.approvalId,
      reason,
      fields.length,
      ...fields,
    ]);
    const [, ...pairs] = replyArray('editApproval', reply, { approvalId });
    const record = decode(`approval ${next.approvalId}`, { approvalId: next.approvalId }, () =>
      approvalFromHash(hashFromPairs(pairs)),
    );
    if (!confirmed) {
      const withdrawn = await this.ctx.script(
        'withdrawEdit',
        [keys[0] as string, keys[1] as string, keys[2] as string, runKeys.approvals],
        [nonce, next.approvalId],
      );
      if (withdrawn === 1) throw this.unconfirmed(approvalId, replicas);
    }
    const index = this.ctx.keys.pendingApprovals;
    await Promise.all([
      this.ctx.redis.zrem(index, approvalId),
      record.status === 'pending' ? this.ctx.redis.zadd(index, record.expiresAt, record.approvalId) : 0,
    ]);
    const old = await this.get(approvalId);
    if (old) {
      await this.audit.appendEvent(
        old,
        { event: 'edit', decider: input.editedBy, editedArgsHash: record.argsHash, at: input.now },
        input.permalink,
      );
    }
    if (record.status !== 'pending') await this.audit.appendDecision(record, input.permalink);
    else if ((record.votes ?? []).length > 0) {
      await this.audit.appendEvent(
        record,
        { event: 'vote', decider: input.editedBy, at: input.now },
        input.permalink,
      );
    }
    return record;
  }

  /**
   * An approved call's plan changed before it ran: stores `planRound(record, plan, now)` as the next round
   * (pending, asked again) and marks `record` superseded by it. Idempotent: a resend returns the round
   * made first. Throws `not_found`, `not_approved` (the round is not approved, or its execution began),
   * `run_ended`. Audited as a `plan_changed` event on the approved round.
   */
  async askAgainForPlan(record: ApprovalRecord, plan: CallPlan, now: number): Promise<ApprovalRecord> {
    const next = planRound(record, plan, now);
    const runKeys = this.ctx.keys.run(record.runId);
    const fields = approvalToHash(next);
    const reply = await this.ctx.script(
      'askAgainForPlan',
      [
        this.ctx.keys.approval(record.approvalId),
        this.ctx.keys.approval(next.approvalId),
        this.ctx.keys.ledger(record.approvalId),
        runKeys.header,
        runKeys.approvals,
      ],
      [next.approvalId, 'the plan changed before it ran: asked again', fields.length, ...fields],
    );
    const [, ...pairs] = replyArray('askAgainForPlan', reply, { approvalId: record.approvalId });
    const stored = decode(`approval ${next.approvalId}`, { approvalId: next.approvalId }, () =>
      approvalFromHash(hashFromPairs(pairs)),
    );
    const index = this.ctx.keys.pendingApprovals;
    await Promise.all([
      this.ctx.redis.zrem(index, record.approvalId),
      stored.status === 'pending' ? this.ctx.redis.zadd(index, stored.expiresAt, stored.approvalId) : 0,
    ]);
    const hashOf = (p: CallPlan | undefined) => (p?.ok ? p.hash.slice(0, 12) : 'none');
    await this.audit.appendEvent(record, {
      event: 'plan_changed',
      note: `approved plan ${hashOf(record.plan)}, current plan ${hashOf(plan)}; asked again as ${stored.approvalId}`,
      at: now,
    });
    return stored;
  }

  /**
   * Adds the escalation approvers of a still-pending approval (once). Returns the record and whether this
   * call escalated it; audited as an escalation when it did.
   */
  async escalate(
    approvalId: string,
    now: number,
  ): Promise<{ record: ApprovalRecord; changed: boolean } | null> {
    const current = await this.get(approvalId);
    if (!current?.escalation) return null;
    const merged = mergeApprovers(current.approvers, current.escalation.to);
    const reply = await this.ctx.script(
      'escalateApproval',
      [this.ctx.keys.approval(approvalId)],
      [JSON.stringify(merged), now],
    );
    const [changed, ...pairs] = replyArray('escalateApproval', reply, { approvalId });
    const record = decode(`approval ${approvalId}`, { approvalId }, () =>
      approvalFromHash(hashFromPairs(pairs)),
    );
    if (changed === 1) {
      const added = [
        ...current.escalation.to.users,
        ...current.escalation.to.groups,
        ...(current.escalation.to.oncall ?? []).map((o) => sourceLabel(o.source)),
      ].join(',');
      await this.audit.appendEvent(record, { event: 'escalation', note: `added ${added}`, at: now });
    }
    return { record, changed: changed === 1 };
  }

  /**
   * Marks that the reminder at `percent` was sent; false when it was already (a redelivered timer). Marked
   * before it is sent: a crash in between loses that reminder rather than sending it twice.
   */
  async markReminded(record: ApprovalRecord, percent: number, note: string, now: number): Promise<boolean> {
    const first = await this.ctx.redis.hsetnx(
      this.ctx.keys.approval(record.approvalId),
      `reminded${percent}`,
      now,
    );
    if (first === 1) await this.audit.appendEvent(record, { event: 'reminder', note, at: now });
    return first === 1;
  }

  /** The latest round of an approval: itself, or the round its edits led to. */
  async latest(approvalId: string): Promise<ApprovalRecord | null> {
    let record = await this.get(approvalId);
    for (let hops = 0; record?.editedTo && hops < 100; hops++) {
      record = await this.get(record.editedTo);
    }
    return record;
  }

  /**
   * Cancels every pending approval of a run (the run was cancelled); decided ones keep their decision.
   * Returns the cancelled records.
   */
  async cancelPending(runId: string, by: string, reason: string, now: number): Promise<ApprovalRecord[]> {
    const keys = this.ctx.keys.run(runId);
    const reply = await this.ctx.script('cancelApprovals', [keys.approvals], [keys.base, by, reason, now]);
    const ids = replyArray('cancelApprovals', reply, { runId }).map(String);
    if (ids.length === 0) return [];
    await this.ctx.redis.zrem(this.ctx.keys.pendingApprovals, ...ids);
    const records = await this.getMany(ids);
    for (const record of records) await this.audit.appendDecision(record);
    return records;
  }

  /** Records where the approval card was posted. Returns false when the approval is gone. */
  /**
   * Records Would approve / Would reject on a shadow call (first click wins; the record stays closed and
   * never gets a ledger entry), audited as `shadow_decision`. Throws `not_found`, or `not_shadow` for a
   * call that is not in shadow mode. `won`: this click's decision is the one recorded.
   */
  async shadowDecide(input: {
    approvalId: string;
    decision: 'would_approve' | 'would_reject';
    by: string;
    now: number;
    permalink?: string;
  }): Promise<{ record: ApprovalRecord; won: boolean }> {
    const { approvalId } = input;
    const value = JSON.stringify({ decision: input.decision, by: input.by, at: input.now });
    const reply = await this.ctx.script('shadowDecide', [this.ctx.keys.approval(approvalId)], [value]);
    if (typeof reply === 'number') throw scriptError('shadowDecide', reply, { approvalId });
    const [won, ...pairs] = replyArray('shadowDecide', reply, { approvalId });
    const record = decode(`approval ${approvalId}`, { approvalId }, () =>
      approvalFromHash(hashFromPairs(pairs)),
    );
    if (won === 1) {
      await this.audit.appendEvent(
        record,
        { event: 'shadow_decision', decider: input.by, note: input.decision, at: input.now },
        input.permalink,
      );
    }
    return { record, won: won === 1 };
  }

  async setCard(approvalId: string, card: { channel: string; ts: string }): Promise<boolean> {
    const reply = await this.ctx.script(
      'updateIfExists',
      [this.ctx.keys.approval(approvalId)],
      ['cardChannel', card.channel, 'cardTs', card.ts],
    );
    if (reply === -1) return false;
    if (reply !== 1) throw badReply('updateIfExists', reply, { approvalId });
    return true;
  }

  /**
   * Remembers that the outcome of a call run again was told in its thread, so a redelivered job does not
   * tell it twice.
   */
  async markReported(approvalId: string, now: number): Promise<void> {
    await this.ctx.script('updateIfExists', [this.ctx.keys.approval(approvalId)], ['reportedAt', now]);
  }

  /** Whether markReported was called for this approval. */
  async wasReported(approvalId: string): Promise<boolean> {
    return (await this.ctx.redis.hexists(this.ctx.keys.approval(approvalId), 'reportedAt')) === 1;
  }

  async get(approvalId: string): Promise<ApprovalRecord | null> {
    const hash = await this.ctx.redis.hgetall(this.ctx.keys.approval(approvalId));
    if (Object.keys(hash).length === 0) return null;
    return decode(`approval ${approvalId}`, { approvalId }, () => approvalFromHash(hash));
  }

  /** Every approval of a run, oldest first. */
  async listForRun(runId: string): Promise<ApprovalRecord[]> {
    const ids = await this.ctx.redis.smembers(this.ctx.keys.run(runId).approvals);
    const records = await this.getMany(ids);
    return records.sort((a, b) => a.createdAt - b.createdAt || a.approvalId.localeCompare(b.approvalId));
  }

  /**
   * Pending approvals not yet expired at `now`, soonest expiry first (for "approvals I may decide";
   * the caller filters by its approver policy). Entries that are no longer pending are dropped from
   * the index on the way, and so are entries that expired longer ago than the retention.
   */
  async listPending(now: number, limit = 50): Promise<ApprovalRecord[]> {
    const key = this.ctx.keys.pendingApprovals;
    await this.ctx.redis.zremrangebyscore(key, '-inf', `(${now - this.ctx.options.retentionMs}`);
    const ids = await this.ctx.redis.zrangebyscore(key, now, '+inf', 'LIMIT', 0, limit);
    const found = await Promise.all(ids.map((id) => this.get(id)));
    const stale = ids.filter((_, i) => found[i]?.status !== 'pending');
    if (stale.length > 0) await this.ctx.redis.zrem(key, ...stale);
    return found.filter((r): r is ApprovalRecord => r?.status === 'pending');
  }

  /**
   * How long (ms) the oldest pending approval has waited, among the `sample` soonest to expire (the
   * index is ordered by expiry; with one approval time for all, the soonest to expire are the oldest).
   * 0 when none waits. For /metrics: bounded work per scrape.
   */
  async oldestPendingAgeMs(now: number, sample = 100): Promise<number> {
    const ids = await this.ctx.redis.zrangebyscore(
      this.ctx.keys.pendingApprovals,
      now,
      '+inf',
      'LIMIT',
      0,
      sample,
    );
    if (ids.length === 0) return 0;
    // One read per approval, not a pipeline: on a cluster each run's approvals are in their own slot.
    const replies = await Promise.all(
      ids.map((id) => this.ctx.redis.hmget(this.ctx.keys.approval(id), 'createdAt', 'status')),
    );
    let oldest = now;
    for (const [createdAt, status] of replies) {
      if (status === 'pending' && createdAt) oldest = Math.min(oldest, Number(createdAt));
    }
    return Math.max(0, now - oldest);
  }

  private unconfirmed(approvalId: string, replicas: number): StoreError {
    const { waitReplicas, waitTimeoutMs } = this.ctx.options;
    return new StoreError(
      'durability_unconfirmed',
      `${replicas} of ${waitReplicas} Redis replicas confirmed the decision on ${approvalId} within ${waitTimeoutMs} ms; it was withdrawn`,
      { approvalId, replicas, wanted: waitReplicas },
    );
  }

  /** Puts approvals that already existed into the index as they are: pending by expiry, others out. */
  private async reindex(records: readonly ApprovalRecord[]): Promise<void> {
    const key = this.ctx.keys.pendingApprovals;
    const pending = records.filter((r) => r.status === 'pending');
    const decided = records.filter((r) => r.status !== 'pending').map((r) => r.approvalId);
    await Promise.all([
      pending.length > 0
        ? this.ctx.redis.zadd(key, ...pending.flatMap((r) => [r.expiresAt, r.approvalId]))
        : 0,
      decided.length > 0 ? this.ctx.redis.zrem(key, ...decided) : 0,
    ]);
  }

  /** Records of approvals of one run, in the order of `ids`; missing ones are left out. */
  private async getMany(ids: readonly string[]): Promise<ApprovalRecord[]> {
    if (ids.length === 0) return [];
    const runIds = new Set(ids.map(runIdOf));
    if (runIds.size !== 1) throw new TypeError('getMany reads the approvals of one run');
    const pipeline = this.ctx.redis.pipeline();
    for (const id of ids) pipeline.hgetall(this.ctx.keys.approval(id));
    const replies = (await pipeline.exec()) ?? [];
    const records: ApprovalRecord[] = [];
    replies.forEach(([error, hash], i) => {
      const id = ids[i] as string;
      if (error) throw error;
      if (hash && typeof hash === 'object' && Object.keys(hash).length > 0) {
        records.push(
          decode(`approval ${id}`, { approvalId: id }, () =>
            approvalFromHash(hash as Record<string, string>),
          ),
        );
      }
    });
    return records;
  }
}
