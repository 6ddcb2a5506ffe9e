import { describe, expect, it } from 'vitest';
import { parsePolicy } from '../../src/config/policy.js';
import { ruleSchemaWarnings } from '../../src/policy/rule-types.js';
import { buildTools } from '../../src/tools/registry.js';
import { ruleArgSchemas } from '../../src/tools/rule-schemas.js';
import { SCALE_POLICY } from './scale-policy.js';

async function warningsOf(yaml: string): Promise<string[]> {
  const policy = parsePolicy(yaml, { env: {} });
  const tools = await buildTools(policy, { env: {} });
  return ruleSchemaWarnings(policy.rules, ruleArgSchemas(tools, policy.tools.run_action?.actions)).map(
    (w) => `${w.key}: ${w.problem}`,
  );
}

describe('rules that cannot apply as written to their tool arguments are named', () => {
  it('a comparison on a string-typed parameter says how it is read', async () => {
    expect(await warningsOf(SCALE_POLICY)).toEqual([
      'rules.run_action[0].when.params.replicas: > 10 compares numbers, and params.replicas is typed string: a value that reads as a decimal number ("50") is compared as one; any other value makes the call asked',
    ]);
  });

  it('a condition that can never hold: unknown argument, value outside the enum, glob on a number, comparison on a boolean', async () => {
    const yaml = SCALE_POLICY.replace(
      'rules:\n  run_action:\n',
      `rules:
  run_action:
    - when: { params.replica: 3 }
      outcome: ask
    - when: { params.env: production }
      outcome: ask
    - when: { action: { oneOf: [scale, restart] }, params.env: { oneOf: [prod, production] } }
      outcome: ask
`,
    ).replace(
      'env: { enum: [staging, prod] }',
      'env: { enum: [staging, prod] }\n          count: { type: integer }\n          dry: { type: boolean }',
    );
    const extra = `
    - when: { params.count: { glob: "1*" } }
      outcome: ask
    - when: { params.dry: { gt: 0 } }
      outcome: ask
`;
    const warnings = await warningsOf(yaml + extra);
    expect(warnings).toEqual([
      'rules.run_action[0].when.params.replica: run_action has no argument params.replica: this condition never holds',
      'rules.run_action[1].when.params.env: = "production" can never hold: no value given is one the schema allows, and params.env is typed string',
      'rules.run_action[3].when.params.replicas: > 10 compares numbers, and params.replicas is typed string: a value that reads as a decimal number ("50") is compared as one; any other value makes the call asked',
      'rules.run_action[6].when.params.count: glob "1*" can never hold: glob and regex match strings, and params.count is typed number',
      'rules.run_action[7].when.params.dry: > 0 can never hold: comparisons read numbers, and params.dry is typed boolean',
    ]);
  });

  it('an index into a list reads one element: the path without it reads every element', () => {
    const policy = parsePolicy(
      `
approvals: { approvers: [U0MGR] }
custom: [{ path: ./deploy.ts, name: deploy }]
rules:
  deploy:
    - when: { targets.0.host: { glob: "prod-*" } }
      outcome: ask
    - when: { targets.host: { glob: "prod-*" }, tags: canary }
      outcome: ask
`,
      { env: {} },
    );
    const schema = {
      type: 'object',
      properties: {
        targets: { type: 'array', items: { type: 'object', properties: { host: { type: 'string' } } } },
        tags: { type: 'array', items: { type: 'string' } },
      },
      additionalProperties: false,
    };
    expect(ruleSchemaWarnings(policy.rules, new Map([['deploy', schema]]))).toEqual([
      {
        key: 'rules.deploy[0].when.targets.0.host',
        problem:
          'reads one element of a list only; targets.host reads every element (some of them for deny and ask, all of them for allow)',
      },
    ]);
  });
});
