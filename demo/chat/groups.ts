/**
 * User groups in the terminal's stand-in Slack. Without them every card approved by a group (`S…`)
 * answered each click with "could not check your user group membership", since the stand-in knew no
 * group. Each group the policy names starts with two stand-in members (a quorum of two can be met);
 * `/group S… U…,U…` sets a group's members.
 */
import type { Policy } from '../../src/config/policy.js';
import { policyApprovers } from '../../src/doctor/slack-checks.js';
import type { FakeSlack } from '../../test/fakes/slack-api-server.js';

export const STAND_IN_MEMBERS = ['U0MEMBER1', 'U0MEMBER2'] as const;

export class ChatGroups {
  private readonly members = new Map<string, string[]>();

  constructor(
    private readonly slack: FakeSlack,
    policy: Policy,
  ) {
    for (const id of policyApprovers(policy).filter((a) => a.startsWith('S'))) {
      this.set(id, [...STAND_IN_MEMBERS]);
    }
  }

  set(groupId: string, users: string[]): void {
    this.members.set(groupId, users);
    this.slack.setGroupMembers(groupId, users);
  }

  list(): [string, string[]][] {
    return [...this.members.entries()];
  }

  describe(groupId: string): string {
    const users = this.members.get(groupId);
    return users && users.length > 0
      ? `user group ${groupId} (members ${users.join(', ')})`
      : `user group ${groupId} (no members: /group ${groupId} U0XXX,U0YYY defines them)`;
  }

  /** `/group S… U…,U…`: an answer to print. */
  command(args: readonly string[]): string {
    const [groupId, users] = args;
    const ids = (users ?? '').split(',').filter((u) => u !== '');
    if (!groupId || !/^S[A-Z0-9]{2,}$/.test(groupId) || ids.some((u) => !/^[UW][A-Z0-9]{2,}$/.test(u))) {
      return 'Usage: /group S0XXX U0AAA,U0BBB (a user group id, then its members, comma-separated)';
    }
    this.set(groupId, ids);
    return `(${this.describe(groupId)}; /as one of them to decide its cards)`;
  }

  /** The groups a card's blocks mention (`<!subteam^S…>`) or name. */
  groupsOf(blocks: unknown): string[] {
    const text = JSON.stringify(blocks ?? []);
    const ids = [...text.matchAll(/\b(S[A-Z0-9]{2,})\b/g)].map((m) => m[1] ?? '');
    return [...new Set(ids.filter((id) => this.members.has(id) || text.includes(`subteam^${id}`)))];
  }
}
