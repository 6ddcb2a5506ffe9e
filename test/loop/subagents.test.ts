import { describe, expect, it } from 'vitest';
import { askTool } from '../../src/agents/ask-tool.js';
import { cancelRun } from '../../src/loop/decisions.js';
import {
  applyChildOutcomes,
  childCaps,
  childResult,
  childRunIdFor,
  outcomeOfChild,
} from '../../src/loop/delegate.js';
import type { EngineDeps } from '../../src/loop/ports.js';
import { settleAndContinue } from '../../src/loop/run.js';
import type { RunState, StepOutcome } from '../../src/loop/run-state.js';
import { createRun } from '../../src/loop/state.js';
import { step } from '../../src/loop/step.js';
import type { ChildOutcome, DelegatedCall } from '../../src/loop/subagents.js';
import type { AnyTool } from '../../src/loop/tool-contract.js';
import { isRunId } from '../../src/store/ids.js';
import { assertWellFormed, call, deps, newRun, scriptedModel } from '../support/engine.js';

const AGENTS = ['triage', 'writer'];

function withAgents(d: EngineDeps): EngineDeps {
  const tools = new Map<string, AnyTool>(d.tools);
  for (const name of AGENTS) tools.set(`ask_${name}`, askTool({ name, description: `The ${name} agent.` }));
  return { ...d, tools };
}

function outcome(d: DelegatedCall, over: Partial<ChildOutcome> = {}): ChildOutcome {
  return {
    toolCallId: d.toolCallId,
    childRunId: d.childRunId,
    agent: d.agent,
    status: 'completed',
    stopReason: 'completed',
    stopMessage: 'Completed.',
    answer: `${d.agent} says all is well`,
    actions: [],
    usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.01, activeMs: 1_000, steps: 2 },
    ...over,
  };
}

function paused(o: StepOutcome): { state: RunState; delegated: DelegatedCall[] } {
  if (o.type !== 'interruption' || !o.delegated) throw new Error(`expected a delegation, got ${o.type}`);
  return { state: o.state, delegated: o.delegated };
}

describe('sub-agent calls in the engine', () => {
  it('a turn with two sub-agent calls pauses, each child capped by a share of what is left', async () => {
    const model = scriptedModel([
      {
        calls: [
          call('ask_triage', { task: 'Check payments' }),
          call('ask_writer', { task: 'Draft a note', context: 'payments is slow' }),
        ],
        usage: { inputTokens: 1_000, outputTokens: 200 },
      },
    ]);
    const { deps: base } = deps(model);
    const d = withAgents(base);
    const { state, delegated } = paused(await step(newRun({ maxTokens: 10_000, maxCostUsd: 1 }), d));
    expect(state.status).toBe('awaiting_approval');
    expect(state.turn?.pending).toEqual([]);
    expect(state.turn?.slots.map((s) => s.result)).toEqual([null, null]);
    expect(delegated.map((c) => [c.agent, c.task, c.context])).toEqual([
      ['triage', 'Check payments', undefined],
      ['writer', 'Draft a note', 'payments is slow'],
    ]);
    // 10,000 - 1,200 tokens left, shared by two; all the remaining time for each.
    expect(delegated[0]?.caps.maxTokens).toBe(4_400);
    expect(delegated[0]?.caps.deadlineMs).toBe(state.limits.deadlineMs);
    expect(delegated[1]?.childRunId).toBe(childRunIdFor(state.runId, delegated[1]!.toolCallId));
    expect(isRunId(delegated[1]!.childRunId)).toBe(true);
    // The paused clock: waiting for children is not the parent's own working time.
    expect(state.usage.activeSince).toBeNull();
  });

  it('results fill their slots in call order whatever order the children end in; usage is charged', async () => {
    const model = scriptedModel([
      {
        calls: [
          call('ask_triage', { task: 'a' }),
          call('lookup', { service: 'x' }),
          call('ask_writer', { task: 'b' }),
        ],
      },
      { text: 'Both agents answered.' },
    ]);
    const { deps: base, clock } = deps(model);
    const d = withAgents(base);
    const { state, delegated } = paused(await step(newRun(), d));
    // The read ran at once; only the sub-agent calls wait.
    expect(state.turn?.slots.map((s) => s.result === null)).toEqual([true, false, true]);
    clock.advance(5_000);
    const [triage, writer] = delegated as [DelegatedCall, DelegatedCall];
    const first = await applyChildOutcomes(
      state,
      [
        outcome(writer, {
          usage: { inputTokens: 50, outputTokens: 5, costUsd: 0.002, activeMs: 3_000, steps: 1 },
        }),
      ],
      d,
    );
    expect(first.type).toBe('interruption');
    // Applying the same end again changes nothing.
    const again = await applyChildOutcomes(first.state, [outcome(writer)], d);
    expect(again.state.usage).toEqual(first.state.usage);
    const done = await applyChildOutcomes(first.state, [outcome(triage)], d);
    expect(done.type).toBe('run_again');
    const s = done.state;
    assertWellFormed(s);
    const tools = s.messages.filter((m) => m.role === 'tool');
    expect(tools.map((m) => (m.role === 'tool' ? m.name : ''))).toEqual([
      'ask_triage',
      'lookup',
      'ask_writer',
    ]);
    const triageResult = JSON.parse(tools[0]!.role === 'tool' ? tools[0]!.content : '');
    expect(triageResult).toMatchObject({
      ok: true,
      data: { agent: 'triage', answer: 'triage says all is well' },
    });
    // Tokens and cost add up; active time is the longest child's (they worked side by side).
    expect(s.usage.inputTokens).toBe(state.usage.inputTokens + 150);
    expect(s.usage.costUsd).toBeCloseTo(state.usage.costUsd + 0.012, 9);
    expect(s.usage.activeMs).toBe(state.usage.activeMs + 3_000);
    expect(s.subagents?.map((r) => [r.agent, r.outcome])).toEqual([
      ['writer', 'completed'],
      ['triage', 'completed'],
    ]);
    const end = await step(s, d);
    expect(end.state.stopReason).toBe('completed');
  });

  it('a turn mixing a gated call and a sub-agent call waits for both, in either order', async () => {
    for (const order of ['decision first', 'child first'] as const) {
      const model = scriptedModel([
        { calls: [call('restart', { service: 'payments' }), call('ask_triage', { task: 'check' })] },
        { text: 'Done.' },
      ]);
      const { deps: base, executed } = deps(model);
      const d = withAgents(base);
      const o = await step(newRun(), d);
      if (o.type !== 'interruption') throw new Error('expected a pause');
      const [gated] = o.gated;
      const [delegated] = o.delegated ?? [];
      const decision = {
        toolCallId: gated!.toolCallId,
        kind: 'approved' as const,
        argsHash: gated!.argsHash,
      };
      const child = outcome(delegated!);
      const firstOut =
        order === 'decision first'
          ? await settleAndContinue(o.state, [decision], [], d)
          : await settleAndContinue(o.state, [], [child], d);
      expect(firstOut.type).toBe('interruption');
      expect(firstOut.state.turn).not.toBeNull();
      const end =
        order === 'decision first'
          ? await settleAndContinue(firstOut.state, [], [child], d)
          : await settleAndContinue(firstOut.state, [decision], [], d);
      expect(end.type).toBe('final');
      expect(end.state.stopReason).toBe('completed');
      assertWellFormed(end.state);
      expect(executed.filter((e) => e.tool === 'restart')).toHaveLength(1);
    }
  });

  it('refuses a sub-agent that would be too deep, and an agent asking itself directly or through others', async () => {
    const asks = [call('ask_triage', { task: 'deeper' })];
    const run = (agent: RunState['agent'], limits = {}) => {
      const state = createRun({
        runId: 'c-child',
        requester: { userId: 'UREQ' },
        systemPrompt: 'sub',
        question: 'q',
        limits,
        now: 1_700_000_000_000,
      });
      return agent ? { ...state, agent } : state;
    };
    const link = (depth: number, lineage: string[]) => ({
      name: lineage.at(-1)!,
      parentRunId: 'r-1',
      parentToolCallId: 'lg1_0_x',
      depth,
      lineage,
    });
    const cases: Array<[RunState, string | null]> = [
      [run(link(1, ['writer'])), null],
      [run(link(2, ['writer', 'writer2'])), 'levels deep'],
      [run(link(2, ['writer', 'writer2']), { maxAgentDepth: 3 }), null],
      [run(link(1, ['triage'])), 'cannot ask itself'],
      [run(link(2, ['triage', 'writer'])), 'triage → writer → triage'],
    ];
    for (const [state, refusal] of cases) {
      const d = withAgents(deps(scriptedModel([{ calls: asks }])).deps);
      const o = await step(state, d);
      if (refusal === null) {
        expect(o.type).toBe('interruption');
        continue;
      }
      expect(o.type).toBe('run_again');
      const result = JSON.parse((o.state.messages.at(-1) as { content: string }).content) as {
        ok: boolean;
        error: { code: string; message: string };
      };
      expect(result.error.code).toBe('delegation_refused');
      expect(result.error.message).toContain(refusal);
    }
  });

  it('sub-agent calls past maxParallelAgents are refused with a result', async () => {
    const asks = Array.from({ length: 3 }, (_, i) => call('ask_triage', { task: `t${i}` }));
    const d = withAgents(deps(scriptedModel([{ calls: asks }])).deps);
    const o = paused(await step(newRun({ maxParallelAgents: 2 }), d));
    expect(o.delegated).toHaveLength(2);
    const third = o.state.turn?.slots[2]?.result;
    expect(third).toMatchObject({ ok: false, error: { code: 'too_many_calls' } });
  });

  it('a failed, stopped or cancelled child is an error result naming why, with its actions', () => {
    const d: DelegatedCall = {
      toolCallId: 'lg1_0_a',
      tool: 'ask_triage',
      agent: 'triage',
      childRunId: 'c-x',
      task: 't',
      caps: { maxTokens: 1, maxCostUsd: 1, deadlineMs: 1 },
      at: 0,
    };
    const actions = [
      {
        toolCallId: 'lg1_0_b',
        tool: 'restart',
        argsHash: 'h',
        outcome: 'rejected' as const,
        decidedBy: 'UMGR',
        summary: 'no',
        agent: 'triage',
      },
      {
        toolCallId: 'lg2_0_c',
        tool: 'announce',
        argsHash: 'h',
        outcome: 'outcome_unknown' as const,
        summary: '?',
        agent: 'triage',
      },
    ];
    const failed = childResult(
      outcome(d, {
        status: 'stopped',
        stopReason: 'tool_errors',
        stopMessage: 'Stopped after 3 failed tool calls in a row.',
        answer: null,
        actions,
      }),
      16_000,
    );
    expect(failed.ok).toBe(false);
    if (failed.ok) return;
    expect(failed.error.code).toBe('subagent_failed');
    expect(failed.error.message).toContain('stopped before finishing (tool_errors)');
    expect(failed.error.message).toContain('restart by triage: rejected (decided by UMGR)');
    expect(failed.error.message).toContain('announce by triage: outcome unknown');
    const cancelled = childResult(
      outcome(d, { status: 'cancelled', stopReason: 'cancelled', answer: null }),
      16_000,
    );
    expect(cancelled).toMatchObject({ ok: false, error: { code: 'cancelled' } });
  });

  it("the parent's answer may not present a child's undone action as done", async () => {
    const model = scriptedModel([
      { calls: [call('ask_triage', { task: 'restart payments' })] },
      { text: 'I restarted payments for you.' },
      { text: 'The triage agent could not restart payments: the restart was rejected.' },
    ]);
    const d = withAgents(deps(model).deps);
    const { state, delegated } = paused(await step(newRun(), d));
    const rejected = {
      toolCallId: 'lg1_0_b',
      tool: 'restart',
      argsHash: 'h',
      outcome: 'rejected' as const,
      decidedBy: 'UMGR',
      summary: 'rejected',
      agent: 'triage',
    };
    let o = await applyChildOutcomes(state, [outcome(delegated[0]!, { actions: [rejected] })], d);
    o = await step(o.state, d);
    expect(o.type).toBe('run_again');
    const correction = o.state.messages.at(-1);
    expect(correction?.role).toBe('user');
    expect(correction?.content).toContain('restart (rejected)');
    o = await step(o.state, d);
    expect(o.state.stopReason).toBe('completed');
  });

  it('cancelling a waiting parent answers the open calls and records the children as abandoned', async () => {
    const d = withAgents(
      deps(scriptedModel([{ calls: [call('ask_triage', { task: 'a' }), call('ask_writer', { task: 'b' })] }]))
        .deps,
    );
    const { state, delegated } = paused(await step(newRun(), d));
    const half = await applyChildOutcomes(state, [outcome(delegated[0]!)], d);
    const cancelled = cancelRun(half.state, d, 'UREQ');
    assertWellFormed(cancelled);
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.subagents?.map((r) => [r.agent, r.outcome, r.childRunId])).toEqual([
      ['triage', 'completed', delegated[0]!.childRunId],
      ['writer', 'abandoned', delegated[1]!.childRunId],
    ]);
  });

  it('outcomeOfChild reports a finished child with its own and its sub-agents actions and usage', () => {
    const child: RunState = {
      ...createRun({ runId: 'c-1', requester: { userId: 'U' }, systemPrompt: 's', question: 'q', now: 0 }),
      status: 'completed',
      stopReason: 'completed',
      stopMessage: 'Completed.',
      answer: ['part one', 'part two'],
      step: 3,
      agent: {
        name: 'triage',
        parentRunId: 'r-1',
        parentToolCallId: 'lg1_0_a',
        depth: 1,
        lineage: ['triage'],
      },
      actions: [
        { toolCallId: 'lg1_0_b', tool: 'restart', argsHash: 'h', outcome: 'succeeded', summary: 'ok' },
      ],
      subagents: [
        {
          toolCallId: 'lg2_0_c',
          agent: 'writer',
          childRunId: 'c-2',
          outcome: 'completed',
          stopReason: 'completed',
          actions: [
            {
              toolCallId: 'lg1_0_z',
              tool: 'announce',
              argsHash: 'h',
              outcome: 'expired',
              summary: 'x',
              agent: 'writer',
            },
          ],
        },
      ],
    };
    const o = outcomeOfChild('lg1_0_a', child);
    expect(o.answer).toBe('part one\n\npart two');
    expect(o.actions.map((a) => [a.agent, a.tool, a.outcome])).toEqual([
      ['triage', 'restart', 'succeeded'],
      ['writer', 'announce', 'expired'],
    ]);
    expect(o.usage.steps).toBe(3);
    expect(() =>
      outcomeOfChild('x', { ...child, status: 'running', stopReason: null, stopMessage: null }),
    ).toThrow();
  });

  it('childCaps shares tokens and cost but gives each child all the time left', () => {
    const state = {
      ...newRun({ maxTokens: 1_000, maxCostUsd: 0.3, deadlineMs: 60_000 }),
      usage: { inputTokens: 300, outputTokens: 100, costUsd: 0.06, activeMs: 10_000, activeSince: null },
    };
    const caps = childCaps(state, 3, 0);
    expect(caps.maxTokens).toBe(200);
    expect(caps.maxCostUsd).toBeCloseTo(0.08, 9);
    expect(caps.deadlineMs).toBe(50_000);
  });

  it('a grant of more budget to the parent raises what its next children may spend', () => {
    const spent = {
      ...newRun({ maxTokens: 1_000, maxCostUsd: 0.3, deadlineMs: 60_000 }),
      usage: { inputTokens: 900, outputTokens: 100, costUsd: 0.3, activeMs: 60_000, activeSince: null },
    };
    expect(childCaps(spent, 2, 0)).toEqual({ maxTokens: 0, maxCostUsd: 0, deadlineMs: 0 });
    const granted = {
      ...spent,
      extensions: [
        { round: 1, reason: 'cost_budget' as const, added: { costUsd: 1 }, by: 'U0CFO', at: 0 },
        { round: 2, reason: 'token_budget' as const, added: { tokens: 400 }, by: 'U0ALICE', at: 0 },
        { round: 3, reason: 'deadline' as const, added: { deadlineMs: 30_000 }, by: 'U0ALICE', at: 0 },
      ],
    };
    const caps = childCaps(granted, 2, 0);
    expect(caps.maxTokens).toBe(200);
    expect(caps.maxCostUsd).toBeCloseTo(0.5, 9);
    expect(caps.deadlineMs).toBe(30_000);
  });
});
