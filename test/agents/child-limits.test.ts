import { describe, expect, it } from 'vitest';
import type { AgentDefinition } from '../../src/agents/catalog.js';
import { childLimits } from '../../src/agents/child-run.js';
import type { DelegatedCall } from '../../src/loop/subagents.js';
import { newRun } from '../support/engine.js';

const call: DelegatedCall = {
  toolCallId: 'c1',
  tool: 'ask_logs',
  agent: 'logs',
  childRunId: 'child',
  task: 'find the error',
  caps: { maxTokens: 5_000, maxCostUsd: 0.01, deadlineMs: 60_000 },
  at: 0,
};
const agent = (model?: string): AgentDefinition => ({
  name: 'logs',
  description: 'Reads logs',
  prompt: 'You read logs.',
  tools: [],
  budgets: { maxTokens: 50_000 },
  ...(model ? { model } : {}),
});
const context = {
  windowTokens: 1_047_576,
  compactAtPercent: 70,
  summaryTokens: 2_000,
  maxStoredResultBytes: 1_000_000,
  maxStoredBytesPerRun: 4_000_000,
};

describe('childLimits', () => {
  it("caps the agent's budgets by the parent's remainder for the call", () => {
    const limits = childLimits(newRun({ maxTokens: 100_000 }).limits, agent(), call);
    expect(limits).toMatchObject({ maxTokens: 5_000, maxCostUsd: 0.01, deadlineMs: 60_000 });
  });

  it("keeps an agent on another model within that model's context window", () => {
    const parent = newRun({ context }).limits;
    expect(childLimits(parent, agent('gpt-4o-mini'), call).context?.windowTokens).toBe(128_000);
    expect(childLimits(parent, agent(), call).context?.windowTokens).toBe(1_047_576);
    expect(childLimits(parent, agent('gpt-4.1'), call).context?.windowTokens).toBe(1_047_576);
  });
});
