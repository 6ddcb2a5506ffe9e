/**
 * What `check-config` reports for a valid policy: the tools it enables (as the worker would build them,
 * custom modules included), who approves each gated one, and the run budgets with the engine's defaults
 * filled in.
 */

import { askToolName } from '../agents/ask-tool.js';
import type { ApproverEntry, Approvers } from '../approvers/approvers.js';
import { approversWords, entriesText } from '../approvers/words.js';
import type { AgentsSettings } from '../config/agents.js';
import type { Policy } from '../config/policy.js';
import { approversFor, limitsFromPolicy } from '../config/policy-limits.js';
import { shadowReason } from '../config/shadow-mode.js';
import { DEFAULT_AGENT_DEPTH, DEFAULT_PARALLEL_AGENTS } from '../loop/delegate.js';
import type { AnyTool } from '../loop/tool-contract.js';
import { ruleLines } from '../policy/describe.js';
import { rulesFor } from '../policy/gate.js';
import { describeLimits, type SlackRateLimits } from '../slack/rate/limits.js';
import { duration } from './format.js';

interface PolicySummary {
  ok: true;
  source: string;
  /** null: the environment's OPENAI_MODEL decides. */
  model: string | null;
  tools: Array<{
    name: string;
    effect: AnyTool['effect'];
    approvers: Approvers | null;
    /** The tool's rules in order, each in words (first match wins; none matching: ask `approvers`). */
    rules: string[];
    /** Gated tools: `shadow` when its calls never run (src/config/shadow-mode.ts); null for reads. */
    mode: 'enforce' | 'shadow' | null;
  }>;
  approvals: {
    approvers: ApproverEntry[];
    selfApproval: boolean;
    expiresAfterMinutes: number;
    mode: 'enforce' | 'shadow';
  };
  /** Channels whose calls are all in shadow mode (channels.shadow). */
  shadowChannels: string[];
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
  /** The Slack rate budgets in force (src/slack/rate). */
  slackRateLimits: SlackRateLimits;
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
      mode: tool.effect === 'read' ? null : shadowReason(policy, tool.name) ? 'shadow' : 'enforce',
    })),
    approvals: { ...policy.approvals },
    shadowChannels: [...policy.channels.shadow],
    budgets: {
      maxSteps: limits.maxSteps,
      deadlineSeconds: limits.deadlineMs / 1_000,
      maxTokens: limits.maxTokens,
      maxCostUsd: limits.maxCostUsd,
      maxConsecutiveToolErrors: limits.maxConsecutiveToolErrors,
      toolTimeoutSeconds: limits.toolTimeoutMs / 1_000,
    },
    channels: [...policy.channels.allow],
    slackRateLimits: { ...policy.slack.rateLimits },
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
  const approvers = (a: Approvers) => approversWords(a) || '(nobody: calls cannot be approved)';
  const b = s.budgets;
  const lines = [
    `OK: ${s.source}`,
    `  model:     ${s.model ?? '(OPENAI_MODEL from the environment)'}`,
    `  channels:  ${s.channels.length === 0 ? 'every channel the bot is in' : s.channels.join(', ')}`,
    `  approvers: ${entriesText(s.approvals.approvers) || '(none by default)'}; self-approval ${s.approvals.selfApproval ? 'allowed' : 'refused'}; approvals expire after ${s.approvals.expiresAfterMinutes} min`,
    ...(s.approvals.mode === 'shadow' || s.shadowChannels.length > 0
      ? [
          `  shadow:    ${[
            s.approvals.mode === 'shadow'
              ? 'approvals.mode is shadow (no gated call runs unless its tool says mode: enforce)'
              : '',
            s.shadowChannels.length > 0
              ? `every call asked in ${s.shadowChannels.join(', ')} is shadowed`
              : '',
          ]
            .filter(Boolean)
            .join('; ')}`,
        ]
      : []),
    `  budgets:   ${b.maxSteps} steps, ${duration(b.deadlineSeconds * 1_000)} active time, ${b.maxTokens} tokens, $${b.maxCostUsd}; stop after ${b.maxConsecutiveToolErrors} failed tool calls in a row; tool timeout ${b.toolTimeoutSeconds} s`,
    `  Slack rate budgets (shared by every process; raise with slack.rateLimits): ${describeLimits(s.slackRateLimits).join('; ')}`,
    `  tools (${s.tools.length}):`,
    ...s.tools.flatMap((t) => [
      `    ${t.name.padEnd(20)} ${t.effect.padEnd(6)}${t.approvers ? ` approvers: ${approvers(t.approvers)}` : ''}${t.mode === 'shadow' ? ' [SHADOW: calls never run]' : ''}`.trimEnd(),
      ...t.rules.map((line) => `      ${line}`),
      ...(t.rules.length > 0
        ? [`      otherwise: ask ${approvers(t.approvers ?? { users: [], groups: [] })}`]
        : []),
    ]),
    ...agentLines(s),
  ];
  return `${lines.join('\n')}\n`;
}
