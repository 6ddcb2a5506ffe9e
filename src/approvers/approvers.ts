/**
 * Who may decide an approval, in one place: the policy's approver entries (Slack user ids, user group ids,
 * on-call sources) with their zod schemas, the stored form on approval records (`Approvers`), and the one
 * parser from the first to the second. Membership of groups and of on-call rotations is looked up at the
 * click (src/approvers/resolve.ts), never frozen here.
 */
import { z } from 'zod';
import { oncallSourceSchema, opsgenieSourceInput, pagerdutySourceInput } from './oncall/source.js';

/** Slack user ids (`U…`, `W…`) and user group ids (`S…`). */
export const approverId = z
  .string()
  .regex(/^[UWS][A-Z0-9]{2,}$/, { error: 'expected a Slack user id (U…/W…) or user group id (S…)' });

/** Approvers named directly (users and groups), stored beside on-call sources. */
const approverIdsSchema = z.strictObject({ users: z.array(z.string()), groups: z.array(z.string()) });
type ApproverIdSets = z.infer<typeof approverIdsSchema>;

/** An on-call source and who decides when it cannot say who is on call (never "anyone"). */
const oncallApproverSchema = z.strictObject({
  source: oncallSourceSchema,
  fallback: approverIdsSchema,
});
export type OncallApprover = z.infer<typeof oncallApproverSchema>;

/** Who may decide, as an approval record stores it. `oncall` is absent on records without sources. */
export const approversSchema = z.strictObject({
  users: z.array(z.string()),
  groups: z.array(z.string()),
  oncall: z.array(oncallApproverSchema).optional(),
});
export type Approvers = z.infer<typeof approversSchema>;

/** Splits Slack ids into users and groups (ids starting with S are user groups). */
const splitIds = (ids: readonly string[]): ApproverIdSets => ({
  users: ids.filter((id) => !id.startsWith('S')),
  groups: ids.filter((id) => id.startsWith('S')),
});

const fallbackList = z
  .array(approverId, { error: 'expected a list of Slack user or user group ids' })
  .min(1, { error: 'required: who decides when the on-call source cannot answer (Slack user or group ids)' });

const oncallInput = z
  .strictObject(
    {
      pagerduty: pagerdutySourceInput.optional(),
      opsgenie: opsgenieSourceInput.optional(),
      fallback: fallbackList,
    },
    { error: 'expected { pagerduty | opsgenie: {...}, fallback: [ids] }' },
  )
  .superRefine((o, ctx) => {
    if ((o.pagerduty === undefined) === (o.opsgenie === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'expected exactly one of pagerduty or opsgenie' });
    }
  })
  .transform(
    (o): OncallApprover => ({
      source: (o.pagerduty ?? o.opsgenie) as NonNullable<typeof o.pagerduty>,
      fallback: splitIds(o.fallback),
    }),
  );

/** `{ oncall: { pagerduty: { schedule: P1ABC }, fallback: [S0SRELEADS] } }`. */
const oncallEntry = z.strictObject({ oncall: oncallInput }).transform((e) => e.oncall);

/** One entry of an `approvers` list: a Slack id, or an on-call source with its fallback. */
const approverEntry = z.union([approverId, oncallEntry], {
  error: 'expected a Slack user id (U…/W…), user group id (S…) or { oncall: {...} }',
});
export type ApproverEntry = z.output<typeof approverEntry>;

export const approverList = z.array(approverEntry, {
  error: 'expected a list of Slack user or user group ids, or on-call sources',
});

/** `approvers` of one write/notify tool or rule, replacing `approvals.approvers` for it. */
export const toolApprovers = approverList.min(1, {
  error: 'expected at least one approver (omit the key to use approvals.approvers)',
});

/** The stored form of a policy list: users, groups and on-call sources. */
export function parseApprovers(entries: readonly ApproverEntry[]): Approvers {
  const ids = entries.filter((e): e is string => typeof e === 'string');
  const oncall = entries.filter((e): e is OncallApprover => typeof e !== 'string');
  return { ...splitIds(ids), ...(oncall.length > 0 ? { oncall } : {}) };
}

/** Everyone in `a` or `b` (escalation adds its approvers to an approval's). */
export function mergeApprovers(a: Approvers, b: Approvers): Approvers {
  const oncall = [...(a.oncall ?? []), ...(b.oncall ?? [])];
  const seen = new Set<string>();
  const unique = oncall.filter((o) => {
    const key = JSON.stringify(o);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return {
    users: [...new Set([...a.users, ...b.users])],
    groups: [...new Set([...a.groups, ...b.groups])],
    ...(unique.length > 0 ? { oncall: unique } : {}),
  };
}

/** Every Slack id an approver list names, on-call fallbacks included (doctor and summaries). */
export function entryIds(entries: readonly ApproverEntry[]): string[] {
  return entries.flatMap((e) => (typeof e === 'string' ? [e] : [...e.fallback.users, ...e.fallback.groups]));
}
