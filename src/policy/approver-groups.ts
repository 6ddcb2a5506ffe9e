/**
 * Whether a person is one of an approval's approvers: named directly, or a member of one of its Slack user
 * groups (looked up with usergroups.users.list by the caller's `lookup`, cached). Used by the bot for every
 * click and by the worker when it uses a grant (the grantor must be an approver of the call now).
 */
import type { Clock } from '../loop/types.js';

/** Who may decide: Slack user ids and user group ids (the policy's `Approvers`). */
export interface ApproverIds {
  readonly users: readonly string[];
  readonly groups: readonly string[];
}

/** Group members, cached; concurrent lookups of one group share one Slack call. */
export interface GroupMembers {
  /** Throws when Slack cannot answer (the caller refuses the click and says so). */
  has(groupId: string, userId: string): Promise<boolean>;
}

export interface GroupMembersOptions {
  lookup: (groupId: string) => Promise<string[]>;
  clock: Clock;
  /** How long a group's member list is trusted. Default 5 minutes. */
  ttlMs?: number;
}

export function createGroupMembers(options: GroupMembersOptions): GroupMembers {
  const ttlMs = options.ttlMs ?? 5 * 60_000;
  const cache = new Map<string, { members: ReadonlySet<string>; until: number }>();
  const inFlight = new Map<string, Promise<ReadonlySet<string>>>();

  const members = (groupId: string): Promise<ReadonlySet<string>> => {
    const cached = cache.get(groupId);
    if (cached && cached.until > options.clock.now()) return Promise.resolve(cached.members);
    const pending = inFlight.get(groupId);
    if (pending) return pending;
    const lookup = options
      .lookup(groupId)
      .then((users) => {
        const set = new Set(users);
        cache.set(groupId, { members: set, until: options.clock.now() + ttlMs });
        return set;
      })
      .finally(() => inFlight.delete(groupId));
    inFlight.set(groupId, lookup);
    return lookup;
  };

  return { has: async (groupId, userId) => (await members(groupId)).has(userId) };
}

/** Whether `userId` is one of `approvers` (directly or through a group). */
export async function isApprover(
  approvers: ApproverIds,
  userId: string,
  groups: GroupMembers,
): Promise<{ ok: true } | { ok: false; reason: 'not_approver' | 'lookup_failed' }> {
  if (approvers.users.includes(userId)) return { ok: true };
  let failed = false;
  for (const groupId of approvers.groups) {
    try {
      if (await groups.has(groupId, userId)) return { ok: true };
    } catch {
      failed = true;
    }
  }
  return { ok: false, reason: failed ? 'lookup_failed' : 'not_approver' };
}
