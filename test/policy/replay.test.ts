import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GateDecision } from '../../src/policy/gate.js';
import {
  type Change,
  changesBetween,
  type Outcome,
  proposedOutcome,
  recordedOutcome,
} from '../../src/policy/replay.js';

const ask = (approvers: string[], quorum = 1, rule: string | null = null): Outcome => ({
  kind: 'ask',
  rule,
  approvers: [...approvers].sort(),
  quorum,
});

describe('what was recorded, read as the policy then decided it', () => {
  it('reads rule decisions, people asked, and leaves out approvers an escalation added', () => {
    const approvers = { users: ['U0LEAD'], groups: ['S0SRE'] };
    expect(
      recordedOutcome({ via: 'rule', status: 'approved', rule: 'rule 1 of run_action', approvers }),
    ).toEqual({
      kind: 'allow',
      rule: 'rule 1 of run_action',
    });
    expect(recordedOutcome({ via: 'rule', status: 'rejected', rule: 'rule 3 of x', approvers })).toEqual({
      kind: 'deny',
      rule: 'rule 3 of x',
    });
    // A grant approved it, but the rule asked people: that is what a policy change would alter.
    expect(recordedOutcome({ via: 'grant', status: 'approved', approvers, quorum: 2 })).toEqual(
      ask(['U0LEAD', 'S0SRE'], 2),
    );
    expect(
      recordedOutcome({
        status: 'expired',
        rule: 'rule 2 of run_action (prod)',
        approvers: { users: ['U0LEAD', 'U0BOSS'], groups: ['S0SRE'] },
        escalation: { to: { users: ['U0BOSS'], groups: [] } },
        escalatedAt: 1,
      }),
    ).toEqual(ask(['U0LEAD', 'S0SRE'], 1, 'rule 2 of run_action (prod)'));
  });
});

describe('changes between what was decided and what the proposed policy decides', () => {
  const allow: Outcome = { kind: 'allow', rule: 'rule 1' };
  const deny: Outcome = { kind: 'deny', rule: 'rule 2' };
  it('names each kind of change', () => {
    expect(changesBetween(ask(['S0SRE']), allow)).toEqual(['newly_allowed']);
    expect(changesBetween(deny, allow)).toEqual(['newly_allowed']);
    expect(changesBetween(ask(['S0SRE']), deny)).toEqual(['newly_denied']);
    expect(changesBetween(allow, ask(['S0SRE']))).toEqual(['no_longer_allowed']);
    expect(changesBetween(deny, ask(['S0SRE']))).toEqual(['no_longer_denied']);
    expect(changesBetween(ask(['S0SRE']), ask(['S0SRE', 'U0LEAD'], 2))).toEqual(['approvers', 'quorum']);
    expect(changesBetween(ask(['S0SRE'], 1, 'rule 2'), ask(['S0SRE'], 1, 'rule 5'))).toEqual([]);
    expect(changesBetween(allow, proposedOutcome(null))).toEqual(['no_longer_offered']);
  });

  const outcome: fc.Arbitrary<Outcome> = fc.oneof(
    fc.constant<Outcome>(allow),
    fc.constant<Outcome>(deny),
    fc
      .record({
        approvers: fc.uniqueArray(fc.constantFrom('U0A', 'U0B', 'S0C'), { maxLength: 3 }),
        quorum: fc.integer({ min: 1, max: 3 }),
      })
      .map(({ approvers, quorum }) => ask(approvers, quorum)),
  );

  it('finds no change exactly when the same outcome, people and quorum decide (property)', () => {
    fc.assert(
      fc.property(outcome, outcome, (before, after) => {
        const same = JSON.stringify({ ...before, rule: null }) === JSON.stringify({ ...after, rule: null });
        expect(changesBetween(before, after).length === 0).toBe(same);
      }),
    );
  });

  it('reads a gate decision in the same terms', () => {
    const decision: GateDecision = {
      kind: 'ask',
      rule: { index: 1, label: 'rule 2 of run_action (prod)' },
      approvers: { users: ['U0LEAD'], groups: ['S0SRE'] },
      quorum: 2,
      selfApproval: false,
      expiresAfterMs: 60_000,
      remindAtPercent: [],
      escalation: null,
      grant: null,
    };
    expect(proposedOutcome(decision)).toEqual(ask(['S0SRE', 'U0LEAD'], 2, 'rule 2 of run_action (prod)'));
    const changes: Change[] = changesBetween(ask(['S0SRE'], 2), proposedOutcome(decision));
    expect(changes).toEqual(['approvers']);
  });
});
