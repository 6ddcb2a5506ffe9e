/**
 * The one resolver of "may this person decide": named directly, a member of one of the approval's Slack
 * user groups, or on call now for one of its on-call sources (or, when a source cannot say who is on call,
 * one of that source's fallback approvers). Each kind of approver is looked up through its own port, at
 * the moment of the click (invariant 9): the bot for every click, the worker when it uses a grant.
 */
import type { GroupMembers } from './groups.js';
import type { OncallRoster } from './oncall/roster-port.js';
import type { OncallSource } from './oncall/source.js';
import { sourceLabel } from './oncall/source.js';

/** Who may decide, read-only: what records, rules and grants hold. */
export interface ApproverIds {
  readonly users: readonly string[];
  readonly groups: readonly string[];
  readonly oncall?: ReadonlyArray<{ source: OncallSource; fallback: ApproverIdsOnly }> | undefined;
}

interface ApproverIdsOnly {
  readonly users: readonly string[];
  readonly groups: readonly string[];
}

/** One lookup port per kind of approver that is not named directly. */
export interface ApproverLookups {
  groups: GroupMembers;
  /** Absent: no on-call source can be asked, so every source's fallback decides. */
  oncall?: OncallRoster | undefined;
}

type ApproverVerdict = { ok: true } | { ok: false; reason: 'not_approver' | 'lookup_failed' };

/** An on-call source as resolved now: who is on call, or why nobody is and who decides instead. */
export type OncallShown =
  | { label: string; onCall: readonly string[] }
  | { label: string; down: string; fallback: ApproverIdsOnly };

async function inIds(ids: ApproverIdsOnly, userId: string, groups: GroupMembers): Promise<ApproverVerdict> {
  if (ids.users.includes(userId)) return { ok: true };
  let failed = false;
  for (const groupId of ids.groups) {
    try {
      if (await groups.has(groupId, userId)) return { ok: true };
    } catch {
      failed = true;
    }
  }
  return { ok: false, reason: failed ? 'lookup_failed' : 'not_approver' };
}

/**
 * Resolves each on-call source now. A source that cannot be asked, fails or names nobody is shown with
 * its fallback: it fails closed to those people, never to anyone.
 */
export async function resolveOncall(
  approvers: ApproverIds,
  lookups: Pick<ApproverLookups, 'oncall'>,
): Promise<OncallShown[]> {
  return Promise.all(
    (approvers.oncall ?? []).map(async ({ source, fallback }): Promise<OncallShown> => {
      const label = sourceLabel(source);
      const now = lookups.oncall
        ? await lookups.oncall.now(source)
        : { ok: false as const, why: 'no on-call lookup is configured' };
      if (now.ok && now.users.length > 0) return { label, onCall: now.users };
      return { label, down: now.ok ? 'nobody is on call' : now.why, fallback };
    }),
  );
}

/** Whether `userId` is one of `approvers` now (directly, through a group, or on call). */
export async function isApprover(
  approvers: ApproverIds,
  userId: string,
  lookups: ApproverLookups,
): Promise<ApproverVerdict> {
  const direct = await inIds(approvers, userId, lookups.groups);
  if (direct.ok) return direct;
  let failed = !direct.ok && direct.reason === 'lookup_failed';
  for (const shown of await resolveOncall(approvers, lookups)) {
    if ('onCall' in shown) {
      if (shown.onCall.includes(userId)) return { ok: true };
      continue;
    }
    const viaFallback = await inIds(shown.fallback, userId, lookups.groups);
    if (viaFallback.ok) return viaFallback;
    failed ||= viaFallback.reason === 'lookup_failed';
  }
  return { ok: false, reason: failed ? 'lookup_failed' : 'not_approver' };
}
