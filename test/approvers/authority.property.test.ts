/**
 * Invariant 9 for on-call approvers: for any sequence of handoffs, provider outages and clicks, the call
 * is decided (and so may execute) only by a click whose clicker was allowed, at that moment, by the
 * approvers in force then: named directly, in a group, on call now, or (only while the source cannot say
 * who is on call) in the source's fallback. The model below is written independently of the resolver.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Approvers } from '../../src/approvers/approvers.js';
import type { OncallNow } from '../../src/approvers/oncall/roster-port.js';
import { isApprover } from '../../src/approvers/resolve.js';
import { mayDecide } from '../../src/bot/approvers.js';
import { parsePolicy } from '../../src/config/policy.js';

const PEOPLE = ['U0A', 'U0B', 'U0C', 'U0D', 'U0E', 'U0F'] as const;
const SCHEDULES = ['P1ABC', 'P2DEF'] as const;
const policy = parsePolicy('approvals: { selfApproval: false }', { env: {} });

type Event =
  | { kind: 'handoff'; schedule: number; users: string[] }
  | { kind: 'down'; schedule: number }
  | { kind: 'click'; user: string };

const person: fc.Arbitrary<string> = fc.constantFrom(...PEOPLE);
const event: fc.Arbitrary<Event> = fc.oneof(
  fc.record({
    kind: fc.constant('handoff' as const),
    schedule: fc.nat(SCHEDULES.length - 1),
    users: fc.uniqueArray(person, { maxLength: 2 }),
  }),
  fc.record({ kind: fc.constant('down' as const), schedule: fc.nat(SCHEDULES.length - 1) }),
  fc.record({ kind: fc.constant('click' as const), user: person }),
);

const rule = fc.record({
  users: fc.uniqueArray(person, { maxLength: 1 }),
  groupMembers: fc.uniqueArray(person, { maxLength: 2 }),
  fallbacks: fc.tuple(fc.uniqueArray(person, { maxLength: 2 }), fc.uniqueArray(person, { maxLength: 2 })),
  requester: person,
});

/** The model: may `user` approve, given who is on call for each schedule now (null: the provider is down)? */
function allowed(r: RuleShape, onCall: (string[] | null)[], user: string) {
  if (user === r.requester) return false;
  if (r.users.includes(user) || r.groupMembers.includes(user)) return true;
  return onCall.some((now, i) =>
    now !== null && now.length > 0 ? now.includes(user) : (r.fallbacks[i] ?? []).includes(user),
  );
}
type RuleShape = {
  users: string[];
  groupMembers: string[];
  fallbacks: [string[], string[]];
  requester: string;
};

describe('authority is judged at the deciding click (on-call approvers)', () => {
  it('a call is decided only by a clicker allowed at that moment by the rule in force', async () => {
    await fc.assert(
      fc.asyncProperty(rule, fc.array(event, { maxLength: 25 }), async (r, events) => {
        const onCall: (string[] | null)[] = SCHEDULES.map(() => []);
        const approvers: Approvers = {
          users: r.users,
          groups: ['S0SRE'],
          oncall: SCHEDULES.map((schedule, i) => ({
            source: { provider: 'pagerduty' as const, schedule, tokenEnv: 'PD' },
            fallback: { users: r.fallbacks[i] ?? [], groups: [] },
          })),
        };
        const lookups = {
          groups: { has: async (_g: string, u: string) => r.groupMembers.includes(u) },
          oncall: {
            now: async (s: { schedule?: string | undefined }): Promise<OncallNow> => {
              const now = onCall[SCHEDULES.indexOf(s.schedule as (typeof SCHEDULES)[number])];
              return now === null || now === undefined
                ? { ok: false, why: 'down' }
                : { ok: true, users: now };
            },
          },
        };
        const record = { tool: 'post_message', requester: r.requester, approvers, selfApproval: false };
        let decidedBy: string | null = null;
        for (const e of events) {
          if (e.kind === 'handoff') onCall[e.schedule] = e.users;
          else if (e.kind === 'down') onCall[e.schedule] = null;
          else if (decidedBy === null) {
            const verdict = await mayDecide(policy, record, e.user, 'approve', lookups);
            const expected = allowed(r, onCall, e.user);
            expect(verdict.ok).toBe(expected);
            expect((await isApprover(approvers, e.user, lookups)).ok).toBe(
              expected || (e.user === r.requester && allowed({ ...r, requester: '' }, onCall, e.user)),
            );
            if (verdict.ok) decidedBy = e.user;
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
