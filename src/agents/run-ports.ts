import type { ModelPort } from '../loop/model-port.js';
import type { RunState } from '../loop/run-state.js';
import type { AnyTool } from '../loop/tool-contract.js';
import type { AgentDefinition, AgentRuntime } from './catalog.js';

/** Sub-registries by agent, per registry: MCP changes make a new registry, and so new subsets. */
const subsets = new WeakMap<ReadonlyMap<string, AnyTool>, Map<string, ReadonlyMap<string, AnyTool>>>();

/** The tools of `agent` out of `tools`, in the order the agent lists them; the same map every time. */
export function toolsOfAgent(
  tools: ReadonlyMap<string, AnyTool>,
  agent: AgentDefinition,
): ReadonlyMap<string, AnyTool> {
  let byAgent = subsets.get(tools);
  if (!byAgent) {
    byAgent = new Map();
    subsets.set(tools, byAgent);
  }
  let subset = byAgent.get(agent.name);
  if (!subset) {
    subset = new Map(agent.tools.flatMap((name) => (tools.has(name) ? [[name, tools.get(name)!]] : [])));
    byAgent.set(agent.name, subset);
  }
  return subset;
}

/**
 * The model and tools a run works with: a person's run has every tool (the agents' `ask_` tools
 * included); a sub-agent's run only those its agent lists, and its agent's model.
 */
export function portsForRun(
  rt: { tools: ReadonlyMap<string, AnyTool>; model: ModelPort; agents?: AgentRuntime },
  state: RunState,
): { tools: ReadonlyMap<string, AnyTool>; model: ModelPort } {
  if (!state.agent) return { tools: rt.tools, model: rt.model };
  const agent = rt.agents?.definitions.get(state.agent.name);
  if (!agent) return { tools: new Map(), model: rt.model };
  return { tools: toolsOfAgent(rt.tools, agent), model: rt.agents?.modelOf(agent) ?? rt.model };
}
