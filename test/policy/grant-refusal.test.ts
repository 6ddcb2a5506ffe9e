/** grantRefusal: the checks an Approve click gets, applied to a grant's grantor at the time of use. */
import { describe, expect, it } from 'vitest';
import type { ApproverLookups } from '../../src/approvers/resolve.js';
import { type Grant, type GrantedCall, grantRefusal } from '../../src/policy/grants.js';

const grant: Grant = {
  grantId: 'g-1',
  tool: 'restart',
  rule: 'rule 1 of restart',
  values: { service: 'payments' },
  scope: 'thread',
  runId: 'r-1',
  teamId: 'T1',
  channelId: 'C1',
  threadTs: '1.1',
  grantedBy: 'UMGR',
  grantedAt: 0,
  expiresAt: 1,
  approvalId: 'r-1.0123456789abcdef',
  approvers: { users: ['UMGR'], groups: [] },
};
const call = (over: Partial<GrantedCall> = {}, ask: Partial<GrantedCall['ask']> = {}): GrantedCall => ({
  requester: 'UREQ',
  teamId: 'T1',
  channelId: 'C1',
  ...over,
  ask: { approvers: { users: [], groups: ['S0SRE'] }, quorum: 1, selfApproval: false, ...ask },
});
const groups = (members: Record<string, string[]>): ApproverLookups => ({
  groups: {
    has: async (group, user) => {
      const list = members[group];
      if (!list) throw new Error('Slack did not answer');
      return list.includes(user);
    },
  },
});

describe('grantRefusal', () => {
  it('accepts a grantor who is an approver through a group now', async () => {
    expect(await grantRefusal(grant, call(), groups({ S0SRE: ['UMGR'] }))).toBeNull();
  });
  it('refuses a grantor who left the group, or whose membership cannot be checked', async () => {
    expect(await grantRefusal(grant, call(), groups({ S0SRE: [] }))).toBe('not_approver');
    expect(await grantRefusal(grant, call(), groups({}))).toBe('lookup_failed');
  });
  it("refuses another channel, a quorum above one and the grantor's own request", async () => {
    const sre = groups({ S0SRE: ['UMGR'] });
    expect(await grantRefusal(grant, call({ channelId: 'C2' }), sre)).toBe('other_channel');
    expect(await grantRefusal(grant, call({ teamId: 'T2' }), sre)).toBe('other_channel');
    expect(await grantRefusal(grant, call({}, { quorum: 2 }), sre)).toBe('quorum');
    expect(await grantRefusal(grant, call({ requester: 'UMGR' }), sre)).toBe('self_approval');
    expect(await grantRefusal(grant, call({ requester: 'UMGR' }, { selfApproval: true }), sre)).toBeNull();
  });
});
