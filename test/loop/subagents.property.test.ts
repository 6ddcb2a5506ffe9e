import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { askTool } from '../../src/agents/ask-tool.js';
import { cancelRun } from '../../src/loop/decisions.js';
import type { Decision } from '../../src/loop/gated-calls.js';
import type { ModelPort } from '../../src/loop/model-port.js';
import { settleAndContinue } from '../../src/loop/run.js';
import type { RunState } from '../../src/loop/run-state.js';
import { step } from '../../src/loop/step.js';
import type { ChildOutcome } from '../../src/loop/subagents.js';
import type { AnyTool } from '../../src/loop/tool-contract.js';
import {
  assertWellFormed,
  deps,
  newRun,
  type ScriptStep,
  scriptedModel,
  unansweredCallsProblem,
} from '../support/engine.js';

const callSpec = fc.oneof(
  fc.record({ name: fc.constant('lookup'), args: fc.constantFrom({ service: 'a' }, { service: 'b' }) }),
  fc.record({ name: fc.constant('broken'), args: fc.constant({}) }),
  fc.record({
    name: fc.constant('restart'),
    args: fc.constantFrom({ service: 'payments' }, { service: 'search' }),
  }),
  fc.record({ name: fc.constant('announce'), args: fc.constantFrom({ text: 'hi' }, { text: 'done' }) }),
  fc.record({
    name: fc.constantFrom('ask_triage', 'ask_writer'),
    args: fc.constantFrom(
      { task: 'look into it' },
      { task: 'draft', context: 'ctx' },
      { task: '' },
      '{"task":',
    ),
  }),
);
const turnSpec = fc.oneof(
  { weight: 1, arbitrary: fc.record({ text: fc.constantFrom('All fine.', '') }) },
  { weight: 4, arbitrary: fc.record({ calls: fc.array(callSpec, { minLength: 1, maxLength: 5 }) }) },
);

/** What happens next while a turn waits: a decision on a gated call, a child ending, or a cancel. */
const eventSpec = fc.record({
  pick: fc.nat(),
  decision: fc.constantFrom('approve', 'reject', 'expire', 'unknown'),
  child: fc.constantFrom('completed', 'failed', 'stopped', 'cancelled'),
  childActions: fc.constantFrom<ChildOutcome['actions'][number]['outcome'][]>(
    [],
    ['succeeded'],
    ['rejected', 'outcome_unknown'],
  ),
  /** Share of its caps the child used. */
  spend: fc.oneof(
    { weight: 2, arbitrary: fc.constant(1) },
    { weight: 1, arbitrary: fc.double({ min: 0, max: 1, noNaN: true }) },
  ),
  replay: fc.boolean(),
  cancel: fc.integer({ min: 0, max: 30 }),
});

describe('sub-agent calls under any interleaving', () => {
  it('every call gets one result before the next model call, nothing gated runs unapproved, budgets nest', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(turnSpec, { maxLength: 10 }),
        fc.array(eventSpec, { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 200, max: 5_000 }),
        async (turns, events, maxTokens) => {
          const script: ScriptStep[] = turns.map((t) =>
            'calls' in t ? { calls: t.calls } : { text: t.text },
          );
          const inner = scriptedModel(script);
          const problems: string[] = [];
          const model: ModelPort = {
            async complete(req) {
              {
                const problem = unansweredCallsProblem(req.messages);
                if (problem) problems.push(problem);
              }
              return inner.complete(req).catch(() => ({
                content: 'Final.',
                toolCalls: [],
                usage: { inputTokens: 1, outputTokens: 1 },
                model: 'test-model',
              }));
            },
          };
          const { deps: base, executed, clock } = deps(model);
          const tools = new Map<string, AnyTool>(base.tools);
          for (const name of ['triage', 'writer'])
            tools.set(`ask_${name}`, askTool({ name, description: name }));
          const d = { ...base, tools };
          const approved = new Map<string, string>();
          const applied = new Set<string>();
          let state: RunState = newRun({
            maxSteps: 8,
            maxTokens,
            maxCostUsd: 1,
            deadlineMs: 60_000,
            maxConsecutiveToolErrors: 4,
            maxAnswerRetries: 1,
          });
          let e = 0;
          for (let guard = 0; guard < 200 && !state.stopReason; guard++) {
            assertWellFormed(state);
            let outcome: { state: RunState };
            if (state.status === 'running') {
              outcome = await step(state, d);
            } else {
              const ev = events[e++ % events.length]!;
              if (ev.cancel === 0) {
                state = cancelRun(state, d, 'UREQ');
                break;
              }
              const turn = state.turn!;
              const waiting = [
                ...turn.pending.map((g) => ({ kind: 'gated' as const, g })),
                ...(turn.delegated ?? []).map((c) => ({ kind: 'child' as const, c })),
              ];
              const next = waiting[ev.pick % waiting.length]!;
              clock.advance(10);
              if (next.kind === 'gated') {
                const g = next.g;
                const decision: Decision =
                  ev.decision === 'approve'
                    ? { toolCallId: g.toolCallId, kind: 'approved', argsHash: g.argsHash, by: 'UMGR' }
                    : ev.decision === 'reject'
                      ? { toolCallId: g.toolCallId, kind: 'rejected', by: 'UMGR' }
                      : ev.decision === 'expire'
                        ? { toolCallId: g.toolCallId, kind: 'expired' }
                        : { toolCallId: g.toolCallId, kind: 'outcome_unknown' };
                if (decision.kind === 'approved') approved.set(`run1:${g.toolCallId}`, g.argsHash);
                outcome = await settleAndContinue(state, [decision], [], d);
              } else {
                const c = next.c;
                // A child keeps to its caps (its own engine enforces them).
                const tokens = Math.floor(c.caps.maxTokens * ev.spend);
                const child: ChildOutcome = {
                  toolCallId: c.toolCallId,
                  childRunId: c.childRunId,
                  agent: c.agent,
                  status: ev.child,
                  stopReason: ev.child === 'completed' ? 'completed' : 'tool_errors',
                  stopMessage: 'ended',
                  answer: ev.child === 'completed' ? 'child answer' : null,
                  actions: ev.childActions.map((outcome, i) => ({
                    toolCallId: `lg1_${i}_x`,
                    tool: 'restart',
                    argsHash: 'h',
                    outcome,
                    summary: outcome,
                    agent: c.agent,
                  })),
                  usage: {
                    inputTokens: tokens,
                    outputTokens: 0,
                    costUsd: c.caps.maxCostUsd * ev.spend,
                    activeMs: Math.floor(c.caps.deadlineMs * ev.spend),
                    steps: 1,
                  },
                };
                // A duplicated hand-over (a redelivered job) applies the same end twice.
                const ends = ev.replay ? [child, child] : [child];
                if (applied.has(c.toolCallId)) throw new Error('a child end was offered twice for one call');
                applied.add(c.toolCallId);
                outcome = await settleAndContinue(state, [], ends, d);
              }
            }
            state = outcome.state;
            // Budgets nest: what the children spent is charged, and never takes the run past its limits.
            expect(state.usage.inputTokens + state.usage.outputTokens).toBeLessThanOrEqual(maxTokens);
            expect(state.usage.costUsd).toBeLessThanOrEqual(1 + 1e-9);
            expect(state.usage.activeMs).toBeLessThanOrEqual(60_000);
          }
          expect(problems).toEqual([]);
          expect(state.stopReason).not.toBe('model_error');
          assertWellFormed(state);
          // Every sub-agent slot was filled exactly once: by its child's end, a refusal, or the run's end.
          const askResults = state.messages.filter((m) => m.role === 'tool' && m.name.startsWith('ask_'));
          const askCalls = state.messages.flatMap((m) =>
            m.role === 'assistant' ? (m.toolCalls ?? []).filter((c) => c.name.startsWith('ask_')) : [],
          );
          if (state.turn === null) expect(askResults).toHaveLength(askCalls.length);
          const records = state.subagents ?? [];
          expect(new Set(records.map((r) => r.toolCallId)).size).toBe(records.length);
          for (const r of records.filter((x) => x.outcome !== 'abandoned'))
            expect(applied.has(r.toolCallId)).toBe(true);
          // Nothing gated ran without an approval of exactly its arguments, and nothing ran twice.
          const gatedRuns = executed.filter((x) => x.tool === 'restart' || x.tool === 'announce');
          expect(new Set(gatedRuns.map((x) => x.key)).size).toBe(gatedRuns.length);
          for (const run of gatedRuns) expect(approved.has(run.key)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});
