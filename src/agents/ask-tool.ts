import { defineTool } from '../loop/define-tool.js';
import { delegationArgs } from '../loop/delegate.js';
import type { AnyTool } from '../loop/tool-contract.js';

/** The tool name under which the model sees an agent. */
export const askToolName = (agent: string): string => `ask_${agent}`;

/**
 * The tool a run calls to hand a task to the agent `name`. The engine never executes it: the call is
 * answered by a child run of the agent (src/loop/delegate.ts).
 */
export function askTool(agent: { name: string; description: string }): AnyTool {
  return defineTool({
    name: askToolName(agent.name),
    description: `Ask the sub-agent "${agent.name}": ${agent.description.trim()} It works on its own with its own tools and answers you, not the person; its write and notify actions still wait for a person's approval. Give it the whole task and the facts it needs: it does not see this conversation. Several sub-agents asked in one reply work at the same time.`,
    effect: 'read',
    parameters: delegationArgs,
    delegate: { agent: agent.name },
    async execute() {
      throw new Error(`${askToolName(agent.name)} is answered by a sub-agent run; it is never executed`);
    },
  });
}
