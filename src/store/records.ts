import { z } from 'zod';
import { approversSchema } from '../approvers/approvers.js';
import { callPlanSchema, toolResultSchema } from './runs/run-state-schema.js';

/**
 * Records the store keeps next to the engine's RunState, with their zod schemas. Redis hashes hold
 * strings only: `*FromHash` turn a hash into a record and validate it, so a damaged record is a clear
 * `corrupt_record` error instead of a half-typed object.
 */

const slackId = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'a Slack id such as C0123ABC');

/** Where a run talks in Slack. */
export const slackContextSchema = z.strictObject({
  teamId: slackId,
  channelId: slackId,
  /** The thread the run replies in (the triggering message's ts for a new thread). */
  threadTs: z.string().min(1),
  /** The message that asked for the run. */
  requestMessageTs: z.string().min(1),
  /** The bot's placeholder/progress message, once posted. */
  placeholderTs: z.string().min(1).optional(),
});
export type SlackContext = z.infer<typeof slackContextSchema>;

/** `superseded`: an approver edited the arguments; the next round (`editedTo`) asks for the edited ones. */
export const approvalStatusSchema = z.enum([
  'pending',
  'approved',
  'rejected',
  'expired',
  'cancelled',
  'superseded',
]);
export type ApprovalStatus = z.infer<typeof approvalStatusSchema>;
export type ApprovalDecision = Exclude<ApprovalStatus, 'pending'>;

/** Who may decide an approval: src/approvers holds its one schema and type. */
export { type Approvers, approversSchema } from '../approvers/approvers.js';

/** A person's approval counted towards a quorum. */
export const voteSchema = z.strictObject({
  by: z.string(),
  at: z.number(),
  /** The decideApproval call that counted it (a resend is recognised, an unconfirmed one withdrawn). */
  nonce: z.string().optional(),
});
export type Vote = z.infer<typeof voteSchema>;

/**
 * What the policy (src/policy) adds to an approval; every field optional, absent on records made before
 * rules existed (read as: no rule, quorum 1, the policy's selfApproval, no grant, not edited).
 */
const policyFields = {
  /** The rule that decided whom to ask (or that allowed or denied the call): `rule 2 of run_action (…)`. */
  rule: z.string().optional(),
  /** The channel rule whose approvers replaced the rule's for this call: `channel rule 2 (incidents)`. */
  approversFrom: z.string().optional(),
  /**
   * How a decision was taken without a click: by an `allow`/`deny` rule, or by a grant; `shadow`: the call
   * was in shadow mode, closed at once as not executed (never approved, so it has no ledger entry).
   */
  via: z.enum(['rule', 'grant', 'shadow']).optional(),
  /** On a shadow call: what the first person to click would have decided, who, and when. */
  shadowDecision: z
    .strictObject({ decision: z.enum(['would_approve', 'would_reject']), by: z.string(), at: z.number() })
    .optional(),
  /** Distinct approvals needed (default 1). */
  quorum: z.number().int().min(1).optional(),
  /** Approvals counted so far, oldest first (the last one is `decidedBy` once approved). */
  votes: z.array(voteSchema).optional(),
  /** May the requester approve (default: the policy's approvals.selfApproval)? */
  selfApproval: z.boolean().optional(),
  /** The rule offers "Approve and allow similar calls" on these arguments, for up to maxMinutes. */
  grantOffer: z.strictObject({ args: z.array(z.string()), maxMinutes: z.number() }).optional(),
  /** The grant that approved this call, or that its approver created with it. */
  grantId: z.string().optional(),
  /** JSON Schema of the tool's parameters, for the Edit form (absent: no Edit). */
  schema: z.record(z.string(), z.unknown()).optional(),
  /** The model's own arguments, when an approver edited them. */
  original: z.strictObject({ args: z.unknown(), argsHash: z.string() }).optional(),
  editedBy: z.string().optional(),
  /** The round this one replaced by editing it; and, on a superseded round, the one that replaced it. */
  editOf: z.string().optional(),
  editedTo: z.string().optional(),
  /**
   * The tool's plan shown with this round (src/loop/plan.ts): the plan its approvers approve. Absent for a
   * tool without `plan`, and on an edited round until the worker computes the edited arguments' plan.
   */
  plan: callPlanSchema.optional(),
  /**
   * On a round asked again because the plan changed after its earlier round was approved: that round,
   * and the plan it had approved (the card shows the difference).
   */
  replanOf: z.strictObject({ approvalId: z.string(), plan: callPlanSchema.optional() }).optional(),
  /** Reminders in the thread at these percentages of the approval's time. */
  remindAtPercent: z.array(z.number()).optional(),
  /** Who is added as approvers, and when, if nobody decided. */
  escalation: z.strictObject({ to: approversSchema, afterMs: z.number() }).optional(),
  escalatedAt: z.number().optional(),
  /**
   * Break glass (src/policy/break-glass.ts): `only` when a deny rule allowing it decided the call as it
   * was asked (the card offers Break glass and Reject, no Approve); `offered` when a deny rule of the
   * tool allows it (a freeze may make that rule decide while the card waits).
   */
  breakGlass: z.enum(['only', 'offered']).optional(),
};

/** One approval per gated call. */
export const approvalRecordSchema = z.strictObject({
  approvalId: z.string(),
  runId: z.string(),
  toolCallId: z.string(),
  tool: z.string(),
  effect: z.enum(['write', 'notify']),
  /** sha256 of the canonical JSON of `args`: the decision is valid for exactly these arguments. */
  argsHash: z.string(),
  args: z.unknown(),
  preview: z.string().nullable(),
  /** The model's stated reason for the call. */
  reason: z.string().nullable(),
  idempotent: z.boolean(),
  /** Slack user id of the person who asked for the run. */
  requester: z.string(),
  approvers: approversSchema,
  createdAt: z.number(),
  expiresAt: z.number(),
  status: approvalStatusSchema,
  decidedBy: z.string().nullable(),
  decidedAt: z.number().nullable(),
  decisionReason: z.string().nullable(),
  /** The approval card, once posted. */
  card: z.strictObject({ channel: z.string(), ts: z.string() }).nullable(),
  ...policyFields,
  /** The sub-agent whose run asked (absent: the person's own run). */
  agent: z.string().optional(),
});
export type ApprovalRecord = z.infer<typeof approvalRecordSchema>;

export const ledgerStatusSchema = z.enum([
  'approved',
  'executing',
  'succeeded',
  'failed',
  'outcome_unknown',
  'not_started',
  'plan_blocked',
]);
export type LedgerStatus = z.infer<typeof ledgerStatusSchema>;

/**
 * Execution ledger of one approved call: approved -> executing -> succeeded | failed | outcome_unknown,
 * or executing -> not_started (no replica confirmed `executing`, so nothing ran) -> executing again, or
 * approved -> plan_blocked (the plan check before execution stopped it: the plan changed or failed).
 */
export const ledgerRecordSchema = z.strictObject({
  approvalId: z.string(),
  status: ledgerStatusSchema,
  /** Times execution began (more than 1 for idempotent tools retried after a crash, or after `not_started`). */
  attempts: z.number(),
  /** The approved arguments' hash, copied from the approval: execution must match it. */
  argsHash: z.string(),
  approvedAt: z.number(),
  startedAt: z.number().nullable(),
  finishedAt: z.number().nullable(),
  /** Fencing token of the lease under which execution last began. */
  fence: z.number().nullable(),
  result: toolResultSchema.nullable(),
  /** Hash of the plan the approvers saw, and of the plan current at execution (tools with `plan`). */
  approvedPlanHash: z.string().optional(),
  currentPlanHash: z.string().optional(),
});
export type LedgerRecord = z.infer<typeof ledgerRecordSchema>;

/** A trace entry: an engine event (or any event with a `type`) and when it happened. */
export const traceEntrySchema = z.looseObject({ type: z.string(), at: z.number() });
export type TraceEntry = z.infer<typeof traceEntrySchema>;

/** A flat Redis reply `[field, value, field, value, ...]` as an object. */
export function hashFromPairs(pairs: readonly unknown[]): Record<string, string> {
  const hash: Record<string, string> = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) hash[String(pairs[i])] = String(pairs[i + 1]);
  return hash;
}

const orNull = (value: string | undefined): string | null =>
  value === undefined || value === '' ? null : value;
const numberOrNull = (value: string | undefined): number | null =>
  orNull(value) === null ? null : Number(value);
const jsonOrNull = (value: string | undefined): unknown =>
  orNull(value) === null ? null : JSON.parse(value ?? '');

/** The hash fields of a new approval record (status pending, nothing decided yet), as field/value pairs. */
export function approvalToHash(record: ApprovalRecord): string[] {
  const fields: Record<string, string> = {
    approvalId: record.approvalId,
    runId: record.runId,
    toolCallId: record.toolCallId,
    tool: record.tool,
    effect: record.effect,
    argsHash: record.argsHash,
    args: JSON.stringify(record.args ?? null),
    preview: record.preview ?? '',
    reason: record.reason ?? '',
    idempotent: record.idempotent ? '1' : '0',
    requester: record.requester,
    approvers: JSON.stringify(record.approvers),
    createdAt: String(record.createdAt),
    expiresAt: String(record.expiresAt),
    status: record.status,
    ...policyHashFields(record),
    ...(record.agent ? { agent: record.agent } : {}),
  };
  return Object.entries(fields).flat();
}

/** Hash fields of the policy's additions that are set; objects as JSON. */
function policyHashFields(record: ApprovalRecord): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of POLICY_KEYS) {
    const value = record[key];
    if (value === undefined) continue;
    out[key] = typeof value === 'string' ? value : JSON.stringify(value);
  }
  if (record.status !== 'pending') {
    out.decidedBy = record.decidedBy ?? '';
    out.decidedAt = record.decidedAt === null ? '' : String(record.decidedAt);
    out.decisionReason = record.decisionReason ?? '';
  }
  return out;
}

const POLICY_KEYS = Object.keys(policyFields) as Array<keyof typeof policyFields>;
const STRING_KEYS: ReadonlySet<string> = new Set([
  'rule',
  'approversFrom',
  'via',
  'grantId',
  'editedBy',
  'editOf',
  'editedTo',
  'breakGlass',
]);

function policyFromHash(hash: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of POLICY_KEYS) {
    const value = hash[key];
    if (value === undefined || value === '') continue;
    out[key] = STRING_KEYS.has(key) ? value : JSON.parse(value);
  }
  return out;
}

/** Parses the JSON fields, then validates; throws on a damaged record. */
export function approvalFromHash(hash: Record<string, string>): ApprovalRecord {
  return approvalRecordSchema.parse({
    approvalId: hash.approvalId,
    runId: hash.runId,
    toolCallId: hash.toolCallId,
    tool: hash.tool,
    effect: hash.effect,
    argsHash: hash.argsHash,
    args: jsonOrNull(hash.args),
    preview: orNull(hash.preview),
    reason: orNull(hash.reason),
    idempotent: hash.idempotent === '1',
    requester: hash.requester,
    approvers: jsonOrNull(hash.approvers),
    createdAt: Number(hash.createdAt),
    expiresAt: Number(hash.expiresAt),
    status: hash.status,
    decidedBy: orNull(hash.decidedBy),
    decidedAt: numberOrNull(hash.decidedAt),
    decisionReason: orNull(hash.decisionReason),
    card: hash.cardChannel && hash.cardTs ? { channel: hash.cardChannel, ts: hash.cardTs } : null,
    ...policyFromHash(hash),
    ...(hash.agent ? { agent: hash.agent } : {}),
  });
}

export function ledgerFromHash(approvalId: string, hash: Record<string, string>): LedgerRecord {
  return ledgerRecordSchema.parse({
    approvalId,
    status: hash.status,
    attempts: Number(hash.attempts ?? 0),
    argsHash: hash.argsHash,
    approvedAt: Number(hash.approvedAt),
    startedAt: numberOrNull(hash.startedAt),
    finishedAt: numberOrNull(hash.finishedAt),
    fence: numberOrNull(hash.fence),
    result: jsonOrNull(hash.result),
    ...(hash.approvedPlanHash ? { approvedPlanHash: hash.approvedPlanHash } : {}),
    ...(hash.currentPlanHash ? { currentPlanHash: hash.currentPlanHash } : {}),
  });
}
