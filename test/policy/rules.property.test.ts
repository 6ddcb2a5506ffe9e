/**
 * Properties of the rule matcher over random rule sets and arguments: the decision is the first matching
 * rule's (first match wins), a call no rule matches gets the tool's default ask, and nothing but an
 * operator-written `allow` rule makes a call run without people: every other decision denies it or asks at
 * least one approver (the rule's quorum, never less than 1). The fast boolean matcher agrees with the
 * explaining one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parsePolicy } from '../../src/config/policy.js';
import { conditionMiss, conditionSchema, conditionVerdict, valueAt } from '../../src/policy/conditions.js';
import { decideGate, explainGate, firstMatch, rulesFor, ruleVerdict } from '../../src/policy/gate.js';

const values = fc.constantFrom('prod', 'staging', 'payments', 'search', 1, 5, 12, true, null);
const condition = fc.oneof(
  values,
  fc.record({ oneOf: fc.array(values, { minLength: 1, maxLength: 3 }) }),
  fc.record({ glob: fc.constantFrom('p*', '*ing', 's?arch', '*') }),
  fc.record({ regex: fc.constantFrom('^p', 'ing$', '(a|e)r', '^(a+)+$') }),
  fc.record({ gt: fc.integer({ min: 0, max: 10 }) }),
  fc.record({ lte: fc.integer({ min: 0, max: 10 }) }),
  fc.record({ present: fc.boolean() }),
);
const rule = fc.record({
  when: fc.dictionary(fc.constantFrom('env', 'service', 'n', 'params.x'), condition, { maxKeys: 2 }),
  outcome: fc.constantFrom('allow', 'deny', 'ask'),
  quorum: fc.integer({ min: 1, max: 3 }),
});
const args = fc.record(
  {
    env: values,
    service: values,
    n: values,
    params: fc.record({ x: values }, { requiredKeys: [] }),
  },
  { requiredKeys: [] },
);

type RuleIn = { when: Record<string, unknown>; outcome: 'allow' | 'deny' | 'ask'; quorum: number };

function policyOf(rules: RuleIn[]) {
  const written = rules.map((r) =>
    r.outcome === 'ask'
      ? { when: r.when, outcome: 'ask', quorum: r.quorum, approvers: ['S0LEADS'] }
      : r.outcome === 'deny'
        ? { when: r.when, outcome: 'deny', reason: 'no' }
        : { when: r.when, outcome: 'allow' },
  );
  // JSON is YAML: the rules go through the same parser as a policy file.
  return parsePolicy(
    JSON.stringify({
      approvals: { approvers: ['U0MGR'], trusted: ['deploy'] },
      custom: [{ path: './deploy.ts', name: 'deploy' }],
      rules: { deploy: written },
    }),
    { env: {} },
  );
}

describe('rule matcher properties', () => {
  it('first match wins; no match is the default ask; only an allow rule runs a call without people', () => {
    fc.assert(
      fc.property(fc.array(rule, { maxLength: 8 }), args, (rules, a) => {
        const policy = policyOf(rules);
        const decision = decideGate(policy, 'deploy', a);
        const index = firstMatch(rulesFor(policy, 'deploy'), a);
        const { tried } = explainGate(policy, 'deploy', a);
        expect(tried.findIndex((t) => t.matched)).toBe(index);
        if (index < 0) {
          expect(decision).toMatchObject({
            kind: 'ask',
            rule: null,
            quorum: 1,
            approvers: { users: ['U0MGR'] },
          });
          return;
        }
        const chosen = rules[index] as RuleIn;
        expect(decision.kind).toBe(chosen.outcome);
        if (decision.kind === 'allow') {
          // Only an allow whose every condition holds, with no undecidable deny before it, runs a call.
          const written = rulesFor(policy, 'deploy');
          expect(ruleVerdict(written[index]!, a)).toBe('holds');
          for (const earlier of written.slice(0, index)) {
            expect(ruleVerdict(earlier, a) === 'unknown' && earlier.outcome !== 'allow').toBe(false);
          }
        }
        expect(decision.rule?.index).toBe(index);
        if (decision.kind === 'ask') {
          expect(decision.quorum).toBe(chosen.quorum);
          expect(decision.quorum).toBeGreaterThanOrEqual(1);
          expect(decision.approvers.users.length + decision.approvers.groups.length).toBeGreaterThan(0);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('the fast matcher and the explaining one agree on every condition', () => {
    fc.assert(
      fc.property(condition, values, (written, value) => {
        const c = conditionSchema.parse(written);
        expect(conditionVerdict(c, value) === 'holds').toBe(conditionMiss(c, value) === null);
        expect(conditionVerdict(c, valueAt({ v: value }, 'v'))).toBe(conditionVerdict(c, value));
      }),
      { numRuns: 500 },
    );
  });
});
