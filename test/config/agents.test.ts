import { describe, expect, it } from 'vitest';
import { agentDefinitions } from '../../src/agents/catalog.js';
import { unknownAgentTools } from '../../src/config/agents.js';
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

const TWO_AGENTS = `
budgets: { maxAgentDepth: 3, maxParallelAgents: 2 }
tools: { current_time: {} }
agents:
  triage:
    description: Finds out what is wrong with a service.
    prompt: You are TRIAGE. Investigate, never fix.
    tools: [current_time, ask_writer]
    model: small-model
    budgets: { maxSteps: 6, deadlineSeconds: 120, maxTokens: 50000, maxCostUsd: 0.1 }
  writer:
    description: Writes status notes.
    prompt: You write short notes.
`;

describe('policy agents', () => {
  it('parses agents with their tools, model and budgets, and the depth and parallel limits', () => {
    const policy = parsePolicy(TWO_AGENTS, { env: {} });
    const defs = agentDefinitions(policy.agents);
    expect(defs.get('triage')).toEqual({
      name: 'triage',
      description: 'Finds out what is wrong with a service.',
      prompt: 'You are TRIAGE. Investigate, never fix.',
      tools: ['current_time', 'ask_writer'],
      model: 'small-model',
      budgets: { maxSteps: 6, deadlineMs: 120_000, maxTokens: 50_000, maxCostUsd: 0.1 },
    });
    expect(defs.get('writer')).toMatchObject({ tools: [], budgets: {} });
    expect(limitsFromPolicy(policy)).toMatchObject({ maxAgentDepth: 3, maxParallelAgents: 2 });
    // Without agents nothing changes in a run's limits.
    expect(limitsFromPolicy(parsePolicy('', { env: {} }))).not.toHaveProperty('maxAgentDepth');
  });

  it('names each bad key of an agent', () => {
    const found = problems(`
agents:
  Bad-Name: { description: x, prompt: y }
  nodesc: { prompt: y }
  selfish: { description: x, prompt: y, tools: [ask_selfish, ask_ghost] }
  spender: { description: x, prompt: y, budgets: { maxTokens: 0, maxHours: 2 } }
budgets: { maxAgentDepth: 9 }
`);
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^agents\.Bad-Name: .*lowercase name/),
        expect.stringMatching(/^agents\.nodesc\.description: required/),
        'agents.spender.budgets.maxTokens: expected at least 1',
        expect.stringMatching(/^agents\.spender\.budgets\.maxHours: unknown key/),
        'budgets.maxAgentDepth: expected at most 5',
      ]),
    );
    // Cross-checks run once each section is valid on its own.
    expect(
      problems(`
agents:
  selfish: { description: x, prompt: y, tools: [ask_selfish, ask_ghost] }
`),
    ).toEqual([
      'agents.selfish.tools[0]: an agent cannot ask itself',
      'agents.selfish.tools[1]: no agent named ghost (agents: selfish)',
    ]);
  });

  it('refuses a tool an agent lists that no built-in, custom or MCP server provides', () => {
    const policy = parsePolicy(
      TWO_AGENTS.replace('[current_time, ask_writer]', '[current_time, ask_writer, http_gett, pg__query]'),
      {
        env: {},
      },
    );
    expect(unknownAgentTools(policy.agents, new Set(['current_time']), ['pg'])).toEqual([
      { key: 'agents.triage.tools[2]', problem: 'no tool named http_gett is enabled (tools: current_time)' },
    ]);
  });
});
