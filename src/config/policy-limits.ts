/** What the policy means for the engine (run limits) and for the bot (who may approve a tool). */

import { type ApproverEntry, type Approvers, parseApprovers } from '../approvers/approvers.js';
import type { ContextLimits } from '../loop/context-window.js';
import type { ModelPrice, RunLimits } from '../loop/run-limits.js';
import { DEFAULT_LIMITS } from '../loop/state.js';
import type { RetryPolicy } from '../loop/tool-contract.js';
import { mcpApprovers, mcpMode, ownValue } from '../mcp/settings.js';
import { extendLimits } from './budget-extend.js';
import { contextTokensOf } from './model-windows.js';
import type { Policy } from './policy.js';

/** Bytes of one long result kept for read_result, and of all of a run's, unless the policy says. */
const DEFAULT_STORED_RESULT_BYTES = 1_000_000;
const DEFAULT_STORED_BYTES_PER_RUN = 4_000_000;

/**
 * The context limits of a run: the smallest window among the primary model (`model` when the policy
 * names none, i.e. OPENAI_MODEL) and its fallbacks, since any of them may be sent the same request;
 * a summary of at most a twentieth of it (256 to 4096 tokens).
 */
function contextLimitsFromPolicy(policy: Policy, model = ''): ContextLimits {
  const primary = policy.model.name ?? model;
  const windows = [
    contextTokensOf(primary, policy.model.contextTokens),
    ...policy.model.fallbacks.map((f) => contextTokensOf(f.name, f.contextTokens)),
  ];
  const windowTokens = Math.min(...windows);
  return {
    windowTokens,
    compactAtPercent: policy.model.compactAtPercent,
    summaryTokens: Math.min(4_096, Math.max(256, Math.floor(windowTokens / 20))),
    maxStoredResultBytes: policy.budgets.maxStoredResultBytes ?? DEFAULT_STORED_RESULT_BYTES,
    maxStoredBytesPerRun: policy.budgets.maxStoredBytesPerRun ?? DEFAULT_STORED_BYTES_PER_RUN,
  };
}

function toPrice(p: {
  input_per_mtok: number;
  output_per_mtok: number;
  cached_input_per_mtok?: number | undefined;
}): ModelPrice {
  return {
    inputPerMTok: p.input_per_mtok,
    outputPerMTok: p.output_per_mtok,
    ...(p.cached_input_per_mtok === undefined ? {} : { cachedInputPerMTok: p.cached_input_per_mtok }),
  };
}

/**
 * The engine's limits for a new run: the engine's defaults (DEFAULT_LIMITS in src/loop/state.ts) with
 * what `budgets:` and `model:` set. A model missing from the price table is priced like the most
 * expensive listed model (unless `model.defaultPrice` says otherwise), so an unlisted model never makes
 * a run look cheaper than it is; with no price listed the engine's default price applies. `model` is the
 * model used when the policy names none (OPENAI_MODEL), for its context window.
 */
export function limitsFromPolicy(policy: Policy, model?: string): RunLimits {
  const prices = Object.fromEntries(
    Object.entries(policy.model.prices).map(([model, p]) => [model, toPrice(p)]),
  );
  const listed = Object.values(prices);
  let defaultPrice = DEFAULT_LIMITS.defaultPrice;
  if (policy.model.defaultPrice) defaultPrice = toPrice(policy.model.defaultPrice);
  else if (listed.length > 0) {
    defaultPrice = {
      inputPerMTok: Math.max(...listed.map((p) => p.inputPerMTok)),
      outputPerMTok: Math.max(...listed.map((p) => p.outputPerMTok)),
    };
  }
  const b = policy.budgets;
  return {
    ...DEFAULT_LIMITS,
    ...(b.maxSteps === undefined ? {} : { maxSteps: b.maxSteps }),
    ...(b.deadlineSeconds === undefined ? {} : { deadlineMs: b.deadlineSeconds * 1000 }),
    ...(b.maxTokens === undefined ? {} : { maxTokens: b.maxTokens }),
    ...(b.maxReplyTokens === undefined ? {} : { maxReplyTokens: b.maxReplyTokens }),
    ...(b.maxCostUsd === undefined ? {} : { maxCostUsd: b.maxCostUsd }),
    ...(b.maxConsecutiveToolErrors === undefined
      ? {}
      : { maxConsecutiveToolErrors: b.maxConsecutiveToolErrors }),
    ...(b.maxToolCallsPerReply === undefined ? {} : { maxToolCallsPerReply: b.maxToolCallsPerReply }),
    ...(b.maxGatedCallsPerPause === undefined ? {} : { maxGatedCallsPerPause: b.maxGatedCallsPerPause }),
    ...(b.maxObservationChars === undefined ? {} : { maxObservationChars: b.maxObservationChars }),
    ...(b.toolTimeoutSeconds === undefined ? {} : { toolTimeoutMs: b.toolTimeoutSeconds * 1000 }),
    ...(b.maxAgentDepth === undefined ? {} : { maxAgentDepth: b.maxAgentDepth }),
    ...(b.maxParallelAgents === undefined ? {} : { maxParallelAgents: b.maxParallelAgents }),
    ...(b.extend === undefined ? {} : { extend: extendLimits(b.extend) }),
    prices,
    defaultPrice,
    context: contextLimitsFromPolicy(policy, model),
  };
}

/**
 * Who may approve calls of `toolName`: the tool's own `approvers` (built-in settings, MCP tool or server,
 * or custom entry)
 * when set, else `approvals.approvers`. Whether the requester may approve their own call is
 * `policy.approvals.selfApproval`, checked by the caller.
 */
export function approversFor(policy: Policy, toolName: string): Approvers {
  const own = ownApprovers(policy, toolName);
  return parseApprovers(own ?? policy.approvals.approvers);
}

/**
 * The retry policy the operator set for `toolName` (`tools.<name>.retry` or its `custom:` entry's), or
 * undefined: the tool's own, else the engine's default applies.
 */
export function retryFor(policy: Policy, toolName: string): RetryPolicy | undefined {
  const tools = policy.tools as Record<string, { retry?: RetryPolicy } | undefined>;
  if (Object.hasOwn(tools, toolName)) return tools[toolName]?.retry;
  return policy.custom.find((entry) => entry.name === toolName)?.retry;
}

function ownApprovers(policy: Policy, toolName: string): ApproverEntry[] | undefined {
  const tools = policy.tools as Record<string, { approvers?: ApproverEntry[] } | undefined>;
  if (Object.hasOwn(tools, toolName)) return tools[toolName]?.approvers;
  const mcp = mcpApprovers(policy.mcp, toolName);
  if (mcp) return mcp;
  return policy.custom.find((entry) => entry.name === toolName)?.approvers;
}

/**
 * The `mode` the policy sets on `toolName` itself (built-in settings, MCP tool or server, or custom
 * entry), or undefined; src/config/shadow-mode.ts adds `approvals.mode` and `channels.shadow`.
 */
export function ownModeOf(
  policy: Pick<Policy, 'tools' | 'custom' | 'mcp'>,
  toolName: string,
): 'enforce' | 'shadow' | undefined {
  const tools = policy.tools as Record<string, { mode?: 'enforce' | 'shadow' } | undefined>;
  const builtIn = ownValue(tools, toolName);
  if (builtIn) return builtIn.mode;
  const mcp = mcpMode(policy.mcp, toolName);
  if (mcp) return mcp;
  return policy.custom.find((entry) => entry.name === toolName)?.mode;
}
