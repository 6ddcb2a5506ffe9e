/**
 * The policy's `agents:` section: sub-agents a run may hand a task to, each seen by the model as the
 * tool `ask_<name>` (src/agents). An agent has its own system prompt, a subset of the tools by name
 * (built-in, custom, MCP, or another agent's `ask_<name>`), optionally another model on the same server,
 * and budgets that its parent's remainder caps further.
 */
import { z } from 'zod';
import type { ConfigProblem } from './errors.js';

/** An agent's name: its tool is `ask_<name>`, which must be a valid function name for the model. */
const agentName = z.string().regex(/^[a-z][a-z0-9_]{0,39}$/, {
  error: 'expected a lowercase name of letters, digits and _ (at most 40)',
});

const positiveInt = (max: number) =>
  z
    .number({ error: 'expected a whole number' })
    .int({ error: 'expected a whole number' })
    .min(1, { error: 'expected at least 1' })
    .max(max, { error: `expected at most ${max}` });

/** An agent's own budgets; its parent's remaining tokens, cost and time cap them further. */
const agentBudgets = z.strictObject({
  maxSteps: positiveInt(500).optional(),
  deadlineSeconds: positiveInt(86_400).optional(),
  maxTokens: positiveInt(100_000_000).optional(),
  maxCostUsd: z
    .number({ error: 'expected US dollars' })
    .positive({ error: 'expected more than 0' })
    .max(10_000)
    .optional(),
});

const agentSettings = z.strictObject({
  /** Written for the parent's model: what the agent is good for (the tool's description). */
  description: z.string().trim().min(1, { error: 'required: what the agent is for' }).max(1_000),
  /** The agent's own system prompt. */
  prompt: z.string().trim().min(1, { error: 'required: the instructions of the agent' }).max(16_000),
  /** Names of the tools it may call; nothing else is offered to it. */
  tools: z.array(z.string().min(1)).max(64).default([]),
  /** Another model on the same server; default the run's model. */
  model: z.string().min(1).optional(),
  budgets: agentBudgets.default({}),
});

export const agentsSection = z.record(agentName, agentSettings).default({});

export type AgentsSettings = z.output<typeof agentsSection>;

const ASK = /^ask_(.+)$/;

/** The problems with the `ask_<name>` entries of agents' tool lists: unknown agents, an agent asking itself. */
export function agentReferenceProblems(agents: AgentsSettings): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const [name, agent] of Object.entries(agents)) {
    agent.tools.forEach((tool, i) => {
      const asked = ASK.exec(tool)?.[1];
      if (asked === undefined) return;
      const key = `agents.${name}.tools[${i}]`;
      if (asked === name) problems.push({ key, problem: 'an agent cannot ask itself' });
      else if (!Object.hasOwn(agents, asked)) {
        problems.push({
          key,
          problem: `no agent named ${asked} (agents: ${Object.keys(agents).join(', ')})`,
        });
      }
    });
  }
  return problems;
}

/**
 * The tool names agents list that this process does not know, once its tools are built. A name of an MCP
 * server's tool (`<server>__<tool>`) counts as known while its server is configured: servers that are
 * down at start-up list their tools later.
 */
export function unknownAgentTools(
  agents: AgentsSettings,
  known: ReadonlySet<string>,
  mcpServers: readonly string[],
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const [name, agent] of Object.entries(agents)) {
    agent.tools.forEach((tool, i) => {
      if (known.has(tool) || ASK.test(tool)) return;
      if (mcpServers.some((server) => tool.startsWith(`${server}__`))) return;
      problems.push({
        key: `agents.${name}.tools[${i}]`,
        problem: `no tool named ${tool} is enabled (tools: ${[...known].filter((t) => !ASK.test(t)).join(', ') || 'none'})`,
      });
    });
  }
  return problems;
}
