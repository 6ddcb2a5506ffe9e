/**
 * Members of Slack user groups, looked up with usergroups.users.list by the caller's `lookup` and cached
 * in the process: the lookup port for group approvers of src/approvers/resolve.ts.
 */
import type { Clock } from '../loop/ports.js';

/** Group members, cached; concurrent lookups of one group share one Slack call. */
export interface GroupMembers {
  /** Throws when Slack cannot answer (the caller refuses the click and says so). */
  has(groupId: string, userId: string): Promise<boolean>;
}

interface GroupMembersOptions {
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
