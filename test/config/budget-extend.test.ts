import { describe, expect, it } from 'vitest';
import { budgetDeciders } from '../../src/config/budget-extend.js';
import { ConfigError } from '../../src/config/errors.js';
import { parsePolicy } from '../../src/config/policy.js';
import { limitsFromPolicy } from '../../src/config/policy-limits.js';

function problems(yaml: string): string[] {
  try {
    parsePolicy(yaml, { env: {} });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems.map((p) => `${p.key}: ${p.problem}`);
  }
  throw new Error('expected the policy to be refused');
}

describe('budgets.extend', () => {
  it('fixes what one grant adds and how many grants a run gets into its limits', () => {
    const policy = parsePolicy(
      'approvals: { approvers: [U0MGR] }\nbudgets: { extend: { steps: 10, seconds: 120, costUsd: 1, times: 2 } }\n',
      { env: {} },
    );
    expect(policy.budgets.extend).toEqual({
      steps: 10,
      seconds: 120,
      tokens: 0,
      costUsd: 1,
      times: 2,
      expiresAfterMinutes: 30,
    });
    expect(limitsFromPolicy(policy).extend).toEqual({
      steps: 10,
      deadlineMs: 120_000,
      tokens: 0,
      costUsd: 1,
      times: 2,
    });
    expect(limitsFromPolicy(parsePolicy('', { env: {} })).extend).toBeUndefined();
  });

  it('names the key of every bad value', () => {
    expect(
      problems(
        'budgets: { extend: { steps: 1.5, times: 0, costUsd: -1, expiresAfterMinutes: 0, step: 3 } }\n',
      ),
    ).toEqual([
      'budgets.extend.steps: expected a whole number',
      'budgets.extend.costUsd: expected 0 or more',
      'budgets.extend.times: expected at least 1',
      'budgets.extend.expiresAfterMinutes: expected at least 1',
      'budgets.extend.step: unknown key',
    ]);
  });

  it('refuses an extension that offers nothing, and cost nobody could grant', () => {
    expect(problems('budgets: { extend: { times: 2 } }\n')).toEqual([
      'budgets.extend: offers nothing: set steps, seconds, tokens or costUsd above 0',
    ]);
    expect(problems('budgets: { extend: { costUsd: 1 } }\n')).toEqual([
      'budgets.extend.approvers: required: costUsd is offered and approvals.approvers is empty, so nobody could grant it',
    ]);
    expect(() =>
      parsePolicy('budgets: { extend: { costUsd: 1, approvers: [S0FIN] } }\n', { env: {} }),
    ).not.toThrow();
  });

  it('the requester answers for steps, time and tokens; the approvers for cost', () => {
    const extend = parsePolicy('budgets: { extend: { steps: 5, costUsd: 1, approvers: [U0CFO, S0FIN] } }\n', {
      env: {},
    }).budgets.extend;
    expect(budgetDeciders(extend, ['U0MGR'], 'max_steps', 'U0ALICE')).toEqual({
      users: ['U0ALICE'],
      groups: [],
    });
    expect(budgetDeciders(extend, ['U0MGR'], 'deadline', 'U0ALICE')).toEqual({
      users: ['U0ALICE'],
      groups: [],
    });
    expect(budgetDeciders(extend, ['U0MGR'], 'cost_budget', 'U0ALICE')).toEqual({
      users: ['U0CFO'],
      groups: ['S0FIN'],
    });
    const { approvers: _none, ...plain } = extend!;
    expect(budgetDeciders(plain, ['U0MGR'], 'cost_budget', 'U0ALICE')).toEqual({
      users: ['U0MGR'],
      groups: [],
    });
  });
});
