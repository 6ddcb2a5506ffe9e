/**
 * Break glass in the policy and on the card: `breakGlass` is accepted on deny rules only; a deny rule
 * carrying it names its people in the gate's decision, and every ask of that tool says the card offers
 * Break glass; the card of a call such a rule denied offers Break glass and Reject, never Approve or Edit,
 * and an ordinary card of such a tool offers Break glass beside Approve; the form's fields are required
 * and bounded.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/errors.js';
import { parsePolicy } from '../../src/config/policy.js';
import { breakGlassFormProblems, breakGlassInForce } from '../../src/policy/break-glass.js';
import { decisionText, outcomeText } from '../../src/policy/describe.js';
import { decideGate } from '../../src/policy/gate.js';
import { type ApprovalView, approvalCard } from '../../src/slack/approval-card.js';
import type { ActionsBlock, Button } from '../../src/slack/block-kit.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { expectValidMessageBlocks } from '../slack/block-checks.js';

const T_FROZEN = Date.parse('2026-03-02T09:25:00Z');
const T_FREE = Date.parse('2026-03-02T10:00:00Z');

function policyWith(rules: string) {
  return parsePolicy(
    `
approvals:
  approvers: [U0MGR]
custom: [{ path: ./deploy.ts, name: deploy }]
freezes:
  lockdown: { windows: [{ start: "2026-03-02 09:20", end: "2026-03-02 09:30" }] }
rules:
  deploy:
${rules}`,
    { env: {} },
  );
}

const BREAKABLE = `
    - name: lockdown
      when: { freeze: lockdown }
      outcome: deny
      reason: nothing ships
      breakGlass: { approvers: [U0LEAD, S0SRE], auditChannel: C0AUDIT }
`;

function problems(rules: string): string[] {
  try {
    policyWith(rules);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems.map((p) => `${p.key}: ${p.problem}`);
  }
  throw new Error('expected the policy to be refused');
}

describe('breakGlass in the policy', () => {
  it('is accepted on a deny rule, and refused elsewhere or without people or with a bad channel', () => {
    expect(() => policyWith(BREAKABLE)).not.toThrow();
    expect(
      problems(`
    - outcome: ask
      breakGlass: { approvers: [U0LEAD] }
    - outcome: deny
      reason: no
      breakGlass: { approvers: [] }
    - outcome: deny
      reason: no
      breakGlass: { approvers: [U0LEAD], auditChannel: audit }
`),
    ).toEqual([
      'rules.deploy[0].breakGlass: only for outcome deny',
      'rules.deploy[1].breakGlass.approvers: expected at least one person who may break glass',
      'rules.deploy[2].breakGlass.auditChannel: expected a Slack channel id such as C0AUDIT',
    ]);
  });

  it('the deny decision names who may break glass; asks of the tool offer it', () => {
    const policy = policyWith(BREAKABLE);
    expect(decideGate(policy, 'deploy', {}, T_FROZEN)).toMatchObject({
      kind: 'deny',
      breakGlass: { approvers: { users: ['U0LEAD'], groups: ['S0SRE'] }, auditChannel: 'C0AUDIT' },
    });
    expect(decideGate(policy, 'deploy', {}, T_FREE)).toMatchObject({ kind: 'ask', breakGlassOffered: true });
    expect(breakGlassInForce(policy, { tool: 'deploy', args: {} }, T_FROZEN)).toMatchObject({
      kind: 'available',
      rule: 'rule 1 of deploy (lockdown)',
      freezes: ['lockdown'],
    });
    expect(breakGlassInForce(policy, { tool: 'deploy', args: {} }, T_FREE)).toEqual({ kind: 'not_denied' });
    expect(decisionText(decideGate(policy, 'deploy', {}, T_FROZEN))).toBe(
      'denied by rule 1 of deploy (lockdown) ("nothing ships"): a card asks U0LEAD, S0SRE whether to break glass (never the requester); nothing runs otherwise',
    );
    const [rule] = policy.rules.deploy ?? [];
    expect(rule && outcomeText(rule)).toBe('deny: nothing ships (break glass: U0LEAD, S0SRE)');
    const plain = policyWith('    - { outcome: deny, reason: never }\n');
    expect(decideGate(plain, 'deploy', {}, T_FREE)).not.toHaveProperty('breakGlass');
    expect(breakGlassInForce(plain, { tool: 'deploy', args: {} }, T_FREE)).toEqual({
      kind: 'not_allowed',
      rule: 'rule 1 of deploy',
    });
  });
});

const view = (overrides: Partial<ApprovalView>): ApprovalView => ({
  approvalId: 'apr_1',
  runId: 'run_1',
  tool: 'deploy',
  effect: 'write',
  args: { env: 'prod' },
  argsHash: 'a'.repeat(64),
  requesterId: 'U0REQ',
  approvers: { users: ['U0LEAD'], groups: [] },
  expiresAt: T_FREE,
  status: 'pending',
  rule: 'rule 1 of deploy (lockdown)',
  editable: true,
  ...overrides,
});

const actionIds = (v: ApprovalView) => {
  const { blocks } = approvalCard(v);
  expectValidMessageBlocks(blocks);
  return blocks
    .filter((b): b is ActionsBlock => b.type === 'actions')
    .flatMap((b) => b.elements as Button[])
    .map((b) => b.action_id);
};

describe('the card', () => {
  it('of a call a break-glass rule denied: Break glass and Reject, no Approve or Edit', () => {
    expect(actionIds(view({ breakGlass: 'only' }))).toEqual([
      ACTION_IDS.breakGlass,
      ACTION_IDS.reject,
      ACTION_IDS.details,
    ]);
    expect(JSON.stringify(approvalCard(view({ breakGlass: 'only' })).blocks)).toContain(
      'Denied by rule 1 of deploy (lockdown).',
    );
  });

  it('of a tool with a break-glass rule: Break glass beside Approve; none once decided', () => {
    const ids = actionIds(view({ breakGlass: 'offered' }));
    expect(ids).toContain(ACTION_IDS.approve);
    expect(ids).toContain(ACTION_IDS.breakGlass);
    expect(actionIds(view({ breakGlass: 'offered', status: 'approved' }))).not.toContain(
      ACTION_IDS.breakGlass,
    );
    expect(actionIds(view({}))).not.toContain(ACTION_IDS.breakGlass);
  });
});

describe('the form', () => {
  it('requires a reason and a one-line incident reference, each bounded', () => {
    expect(breakGlassFormProblems({ reason: ' db down ', incident: ' INC-1 ' })).toEqual({
      ok: true,
      form: { reason: 'db down', incident: 'INC-1' },
    });
    expect(breakGlassFormProblems({ reason: '  ', incident: null })).toEqual({
      ok: false,
      errors: {
        reason: 'A reason is required to break glass.',
        incident: 'An incident reference is required (e.g. INC-1234).',
      },
    });
    expect(breakGlassFormProblems({ reason: 'r', incident: 'I'.repeat(101) })).toMatchObject({
      errors: { incident: 'At most 100 characters (this one has 101).' },
    });
    expect(breakGlassFormProblems({ reason: 'r', incident: 'INC-1\nINC-2' })).toMatchObject({
      errors: { incident: 'One line only.' },
    });
  });
});
