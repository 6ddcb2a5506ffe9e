/**
 * What `check-config` reports for a valid policy: the tools it enables (as the worker would build them,
 * custom modules included), who approves each gated one, and the run budgets with the engine's defaults
 * filled in.
 */
import { askToolName } from '../agents/ask-tool.js';
import type { AgentsSettings } from '../config/agents.js';
import type { Policy } from '../config/policy.js';
import { approversFor, limitsFromPolicy } from '../config/policy-limits.js';
import { DEFAULT_AGENT_DEPTH, DEFAULT_PARALLEL_AGENTS } from '../loop/delegate.js';
import type { AnyTool } from '../loop/types.js';
import { ruleLines } from '../policy/describe.js';
import { rulesFor } from '../policy/gate.js';
import { duration } from './format.js';

export interface PolicySummary {
  ok: true;
  source: string;
  /** null: the environment's OPENAI_MODEL decides. */
  model: string | null;
  tools: Array<{
    name: string;
    effect: AnyTool['effect'];
    approvers: { users: string[]; groups: string[] } | null;
    /** The tool's rules in order, each in words (first match wins; none matching: ask `approvers`). */
    rules: string[];
  }>;
  approvals: { approvers: string[]; selfApproval: boolean; expiresAfterMinutes: number };
  budgets: {
    maxSteps: number;
    deadlineSeconds: number;
    maxTokens: number;
    maxCostUsd: number;
    maxConsecutiveToolErrors: number;
    toolTimeoutSeconds: number;
  };
  /** Empty: every channel the bot is invited to. */
  channels: string[];
  /** Sub-agents, each offered to the model as `tool`. */
  agents: Array<{
    name: string;
    tool: string;
    description: string;
    tools: string[];
    /** null: the run's model. */
    model: string | null;
    /** The agent's own budgets (a parent's remainder caps them further); absent ones are the run's. */
    budgets: AgentsSettings[string]['budgets'];
  }>;
  /** Levels of sub-agents below a person's run, and sub-agent calls of one reply started at once. */
  agentLimits: { maxDepth: number; maxParallel: number };
}

export function summarisePolicy(policy: Policy, tools: ReadonlyMap<string, AnyTool>): PolicySummary {
  const limits = limitsFromPolicy(policy);
  return {
    ok: true,
    source: policy.source,
    model: policy.model.name ?? null,
    tools: [...tools.values()].map((tool) => ({
      name: tool.name,
      effect: tool.effect,
      approvers: tool.effect === 'read' ? null : approversFor(policy, tool.name),
      rules: ruleLines(tool.name, rulesFor(policy, tool.name)),
    })),
    approvals: { ...policy.approvals },
    budgets: {
      maxSteps: limits.maxSteps,
      deadlineSeconds: limits.deadlineMs / 1_000,
      maxTokens: limits.maxTokens,
      maxCostUsd: limits.maxCostUsd,
      maxConsecutiveToolErrors: limits.maxConsecutiveToolErrors,
      toolTimeoutSeconds: limits.toolTimeoutMs / 1_000,
    },
    channels: [...policy.channels.allow],
    agents: Object.entries(policy.agents).map(([name, a]) => ({
      name,
      tool: askToolName(name),
      description: a.description,
      tools: [...a.tools],
      model: a.model ?? null,
      budgets: { ...a.budgets },
    })),
    agentLimits: {
      maxDepth: limits.maxAgentDepth ?? DEFAULT_AGENT_DEPTH,
      maxParallel: limits.maxParallelAgents ?? DEFAULT_PARALLEL_AGENTS,
    },
  };
}

function agentLines(s: PolicySummary): string[] {
  if (s.agents.length === 0) return [];
  const budget = (b: PolicySummary['agents'][number]['budgets']) =>
    [
      b.maxSteps === undefined ? '' : `${b.maxSteps} steps`,
      b.deadlineSeconds === undefined ? '' : `${duration(b.deadlineSeconds * 1_000)} active time`,
      b.maxTokens === undefined ? '' : `${b.maxTokens} tokens`,
      b.maxCostUsd === undefined ? '' : `$${b.maxCostUsd}`,
    ]
      .filter(Boolean)
      .join(', ') || "the run's";
  return [
    `  agents (${s.agents.length}, at most ${s.agentLimits.maxDepth} levels deep, ${s.agentLimits.maxParallel} at once):`,
    ...s.agents.map(
      (a) =>
        `    ${a.tool.padEnd(20)} tools: ${a.tools.join(', ') || '(none)'}; model: ${a.model ?? "the run's"}; budgets: ${budget(a.budgets)} (capped by what its parent has left)`,
    ),
  ];
}

export function summaryText(s: PolicySummary): string {
  const approvers = (a: { users: string[]; groups: string[] }) =>
    [...a.users, ...a.groups].join(', ') || '(nobody: calls cannot be approved)';
  const b = s.budgets;
  const lines = [
    `OK: ${s.source}`,
    `  model:     ${s.model ?? '(OPENAI_MODEL from the environment)'}`,
    `  channels:  ${s.channels.length === 0 ? 'every channel the bot is in' : s.channels.join(', ')}`,
    `  approvers: ${s.approvals.approvers.join(', ') || '(none by default)'}; self-approval ${s.approvals.selfApproval ? 'allowed' : 'refused'}; approvals expire after ${s.approvals.expiresAfterMinutes} min`,
    `  budgets:   ${b.maxSteps} steps, ${duration(b.deadlineSeconds * 1_000)} active time, ${b.maxTokens} tokens, $${b.maxCostUsd}; stop after ${b.maxConsecutiveToolErrors} failed tool calls in a row; tool timeout ${b.toolTimeoutSeconds} s`,
    `  tools (${s.tools.length}):`,
    ...s.tools.flatMap((t) => [
      `    ${t.name.padEnd(20)} ${t.effect.padEnd(6)}${t.approvers ? ` approvers: ${approvers(t.approvers)}` : ''}`.trimEnd(),
      ...t.rules.map((line) => `      ${line}`),
      ...(t.rules.length > 0
        ? [`      otherwise: ask ${approvers(t.approvers ?? { users: [], groups: [] })}`]
        : []),
    ]),
    ...agentLines(s),
  ];
  return `${lines.join('\n')}\n`;
}
