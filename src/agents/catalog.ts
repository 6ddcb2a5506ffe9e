/**
 * The agents this process knows (policy `agents:`), as the worker uses them: definitions by name, the
 * model each one talks to, and how often a parent checks on a child whose end has not reached it.
 */
import type { AgentsSettings } from '../config/agents.js';
import type { ModelPort } from '../loop/model-port.js';

export interface AgentDefinition {
  name: string;
  /** What the parent's model reads about the agent (its tool's description). */
  description: string;
  /** The agent's own instructions, at the head of its system prompt. */
  prompt: string;
  /** The tools it may call, by name; nothing else is offered to it. */
  tools: readonly string[];
  /** Another model on the run model's server; absent: the run's model. */
  model?: string;
  /** Its own budgets; the parent's remainder caps them further. */
  budgets: { maxSteps?: number; deadlineMs?: number; maxTokens?: number; maxCostUsd?: number };
}

export interface AgentRuntime {
  definitions: ReadonlyMap<string, AgentDefinition>;
  /** The model port a run of `agent` talks to. */
  modelOf(agent: AgentDefinition): ModelPort;
  /**
   * How long after handing a call over, and then how often, the parent checks on the child by a delayed
   * job: so a hand-over job that was lost (not just delayed) still ends the wait. Default 5 minutes.
   */
  watchMs: number;
}

export const DEFAULT_WATCH_MS = 5 * 60_000;

export function agentDefinitions(settings: AgentsSettings): Map<string, AgentDefinition> {
  return new Map(
    Object.entries(settings).map(([name, a]) => {
      const b = a.budgets;
      const budgets = {
        ...(b.maxSteps === undefined ? {} : { maxSteps: b.maxSteps }),
        ...(b.deadlineSeconds === undefined ? {} : { deadlineMs: b.deadlineSeconds * 1_000 }),
        ...(b.maxTokens === undefined ? {} : { maxTokens: b.maxTokens }),
        ...(b.maxCostUsd === undefined ? {} : { maxCostUsd: b.maxCostUsd }),
      };
      const definition: AgentDefinition = {
        name,
        description: a.description,
        prompt: a.prompt,
        tools: a.tools,
        ...(a.model === undefined ? {} : { model: a.model }),
        budgets,
      };
      return [name, definition];
    }),
  );
}
