/**
 * What a sub-agent's run starts with: its system prompt (the agent's instructions, its place as a
 * sub-agent, the shared rules about untrusted content), its question (the task and its context), and its
 * limits (the agent's budgets, capped by what its parent has left).
 */
import { contextTokensOf } from '../config/model-windows.js';
import type { RunLimits } from '../loop/run-limits.js';
import type { RunState } from '../loop/run-state.js';
import { createRun, currentTimeNote } from '../loop/state.js';
import type { DelegatedCall } from '../loop/subagents.js';
import { UNTRUSTED_CONTENT_RULES } from '../tools/system-prompt.js';
import type { AgentDefinition } from './catalog.js';

/** Stable for an agent under one policy (a prefix servers cache); the time is a note in the question. */
function childSystemPrompt(agent: AgentDefinition, toolNames: readonly string[]): string {
  const role = `You are "${agent.name}", a sub-agent of loopgate. Another agent handed you the task in the next message. Your final answer goes back to that agent, not to a person: make it complete and factual, with what you found (and where), what you did, and what you could not do.
- Use your tools when facts are needed. Tools that change something or notify people wait for a human approver in the team's Slack thread; never claim a change happened unless its tool result says it succeeded. If a call was rejected or failed, say so.
- If a tool result is an error, read its message: fix the arguments or try another approach instead of repeating the same call.`;
  return [
    agent.prompt,
    role,
    UNTRUSTED_CONTENT_RULES,
    ...(toolNames.length > 0 ? [] : ['No tools are available to you: answer from the task alone.']),
  ].join('\n\n');
}

function childQuestion(call: Pick<DelegatedCall, 'task' | 'context'>): string {
  return call.context ? `${call.task}\n\nContext from the agent that asked:\n${call.context}` : call.task;
}

/** The agent's budgets over the parent's limits, each capped by the parent's remainder for this call. */
export function childLimits(
  parent: RunLimits,
  agent: AgentDefinition | undefined,
  call: DelegatedCall,
): RunLimits {
  const own = agent?.budgets ?? {};
  // An agent on another model keeps its requests within that model's window too.
  const context =
    parent.context && agent?.model
      ? {
          ...parent.context,
          windowTokens: Math.min(parent.context.windowTokens, contextTokensOf(agent.model, undefined)),
        }
      : parent.context;
  return {
    ...parent,
    ...(context ? { context } : {}),
    maxSteps: own.maxSteps ?? parent.maxSteps,
    deadlineMs: Math.min(own.deadlineMs ?? parent.deadlineMs, call.caps.deadlineMs),
    maxTokens: Math.min(own.maxTokens ?? parent.maxTokens, call.caps.maxTokens),
    maxCostUsd: Math.min(own.maxCostUsd ?? parent.maxCostUsd, call.caps.maxCostUsd),
  };
}

/**
 * The run answering `call` of `parent`: the parent's requester (approvers are checked against them), the
 * agent's prompt and tools. Without a definition (the agent left the policy since the call) the run is
 * born failed, so the parent reads why instead of waiting.
 */
export function newChildRun(
  parent: RunState,
  call: DelegatedCall,
  agent: AgentDefinition | undefined,
  toolNames: readonly string[],
  now: number,
): RunState {
  const state = createRun({
    runId: call.childRunId,
    requester: parent.requester,
    systemPrompt: agent ? childSystemPrompt(agent, toolNames) : `Sub-agent ${call.agent}.`,
    question: childQuestion(call),
    questionNote: currentTimeNote(now),
    limits: childLimits(parent.limits, agent, call),
    now,
  });
  const child: RunState = {
    ...state,
    agent: {
      name: call.agent,
      parentRunId: parent.runId,
      parentToolCallId: call.toolCallId,
      depth: (parent.agent?.depth ?? 0) + 1,
      lineage: [...(parent.agent?.lineage ?? []), call.agent],
    },
  };
  if (agent) return child;
  return {
    ...child,
    status: 'failed',
    stopReason: 'internal_error',
    stopMessage: `The sub-agent ${call.agent} is no longer configured (agents.${call.agent}).`,
    usage: { ...child.usage, activeSince: null },
  };
}
