import { describe, expect, it } from 'vitest';
import type { Approvers } from '../../src/approvers/approvers.js';
import type { OncallNow, OncallRoster } from '../../src/approvers/oncall/roster-port.js';
import { type ApproverLookups, isApprover, resolveOncall } from '../../src/approvers/resolve.js';
import { verdictText } from '../../src/bot/approvers.js';
import { approvalCard } from '../../src/slack/approval-card.js';

/** A roster answering from a mutable map: the provider as it is at each call. */
function roster(state: Map<string, OncallNow>): OncallRoster {
  return { now: async (s) => state.get(s.schedule ?? '') ?? { ok: true, users: [] } };
}

const approvers: Approvers = {
  users: ['U0LEAD'],
  groups: [],
  oncall: [
    {
      source: { provider: 'pagerduty', schedule: 'P1ABC', tokenEnv: 'PD' },
      fallback: { users: ['U0BACKUP'], groups: ['S0SRE'] },
    },
  ],
};
const sre = { has: async (group: string, user: string) => group === 'S0SRE' && user === 'U0SRE1' };

describe('the approver resolver with on-call sources', () => {
  it('lets the on-call of the moment decide, and not the previous one after a handoff', async () => {
    const state = new Map<string, OncallNow>([['P1ABC', { ok: true, users: ['U0ALICE'] }]]);
    const lookups: ApproverLookups = { groups: sre, oncall: roster(state) };
    expect(await isApprover(approvers, 'U0ALICE', lookups)).toEqual({ ok: true });
    state.set('P1ABC', { ok: true, users: ['U0BOB'] });
    expect(await isApprover(approvers, 'U0ALICE', lookups)).toEqual({ ok: false, reason: 'not_approver' });
    expect(await isApprover(approvers, 'U0BOB', lookups)).toEqual({ ok: true });
    // Listed otherwise: still an approver whoever is on call.
    expect(await isApprover(approvers, 'U0LEAD', lookups)).toEqual({ ok: true });
    // The fallback decides only when the source cannot say who is on call.
    expect(await isApprover(approvers, 'U0BACKUP', lookups)).toEqual({ ok: false, reason: 'not_approver' });
  });

  it('fails closed to the fallback (users and groups) when the provider is down or names nobody', async () => {
    const outages: OncallNow[] = [
      { ok: false, why: 'PagerDuty answered HTTP 503' },
      { ok: true, users: [] },
    ];
    for (const now of outages) {
      const lookups: ApproverLookups = { groups: sre, oncall: roster(new Map([['P1ABC', now]])) };
      expect(await isApprover(approvers, 'U0BACKUP', lookups)).toEqual({ ok: true });
      expect(await isApprover(approvers, 'U0SRE1', lookups)).toEqual({ ok: true });
      expect(await isApprover(approvers, 'U0RANDOM', lookups)).toEqual({ ok: false, reason: 'not_approver' });
    }
    // A process without a roster: only the fallback.
    expect(await isApprover(approvers, 'U0BACKUP', { groups: sre })).toEqual({ ok: true });
    expect(await isApprover(approvers, 'U0ALICE', { groups: sre })).toEqual({
      ok: false,
      reason: 'not_approver',
    });
  });

  it('tells a refused clicker who is on call now, or that the fallback decides and why', async () => {
    const record = { tool: 'post_message', approvers };
    const up = await resolveOncall(approvers, {
      oncall: roster(new Map([['P1ABC', { ok: true, users: ['U0BOB'] }]])),
    });
    expect(verdictText({ ok: false, reason: 'not_approver' }, record, 'approve', up)).toBe(
      'You may not approve `post_message` calls. They can be decided by <@U0LEAD>, <@U0BOB> (on call now: PagerDuty schedule P1ABC). Nothing was changed.',
    );
    const down = await resolveOncall(approvers, {
      oncall: roster(new Map([['P1ABC', { ok: false, why: 'PagerDuty answered HTTP 503' }]])),
    });
    expect(verdictText({ ok: false, reason: 'not_approver' }, record, 'approve', down)).toBe(
      'You may not approve `post_message` calls. They can be decided by <@U0LEAD>, <@U0BACKUP>, <!subteam^S0SRE> (fallback: PagerDuty schedule P1ABC cannot say who is on call: PagerDuty answered HTTP 503). Nothing was changed.',
    );
  });

  it('draws the card with who is on call now, the fallback when down, and never "anyone"', async () => {
    const view = {
      approvalId: 'a1',
      runId: 'r1',
      tool: 'post_message',
      effect: 'notify' as const,
      args: { channel: 'C0OPS', text: 'hi' },
      argsHash: 'h',
      requesterId: 'U0REQ',
      approvers,
      expiresAt: 1_900_000_000_000,
      status: 'pending' as const,
    };
    const text = (v: object) => JSON.stringify(approvalCard({ ...view, ...v }).blocks);
    expect(text({ oncallNow: [{ label: 'PagerDuty schedule P1ABC', onCall: ['U0BOB'] }] })).toContain(
      'Can decide: <@U0LEAD>, <@U0BOB> (on call now: PagerDuty schedule P1ABC)',
    );
    const down = [
      {
        label: 'PagerDuty schedule P1ABC',
        down: 'PagerDuty answered HTTP 503',
        fallback: approvers.oncall?.[0]?.fallback ?? { users: [], groups: [] },
      },
    ];
    expect(text({ oncallNow: down })).toContain(
      '<@U0BACKUP>, <!subteam^S0SRE> (fallback: PagerDuty schedule P1ABC cannot say who is on call: PagerDuty answered HTTP 503)',
    );
    expect(text({})).toContain(
      'the on-call of PagerDuty schedule P1ABC (fallback: <@U0BACKUP>, <!subteam^S0SRE>)',
    );
    for (const v of [{}, { oncallNow: down }]) expect(text(v).toLowerCase()).not.toContain('anyone');
  });
});
