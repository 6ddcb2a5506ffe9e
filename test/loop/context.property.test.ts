/**
 * Invariants 1 and 2 of design.md §4 under compaction: whatever the model asks, however tool attempts
 * fail and are retried, whatever people decide and whenever the run is reloaded, every request the model
 * is sent pairs each tool call with exactly its results (none missing, none orphaned), the stored history
 * stays well formed and only grows, and no write or notify call runs without an approval of exactly its
 * arguments, at most once.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { applyDecisions } from '../../src/loop/decisions.js';
import { defineTool } from '../../src/loop/define-tool.js';
import { ModelError, ToolFailure } from '../../src/loop/errors.js';
import type { Decision } from '../../src/loop/gated-calls.js';
import { argsHash } from '../../src/loop/hash.js';
import type { ModelPort } from '../../src/loop/model-port.js';
import type { RunState } from '../../src/loop/run-state.js';
import { step } from '../../src/loop/step.js';
import type { AnyTool } from '../../src/loop/tool-contract.js';
import { assertWellFormed, deps, newRun, type ScriptStep, testTools } from '../support/engine.js';
import { contextLimits, memoryResultStore } from '../support/memory-results.js';
import { isSummaryRequest, pairingProblem, windowModel } from '../support/window-model.js';

/** The test tools plus a long report and a read that fails transiently on its first attempts. */
function tools(flakyFailures: number) {
  const { tools: base, executed } = testTools();
  const attempts = new Map<string, number>();
  const report = defineTool({
    name: 'report',
    description: 'A long report',
    effect: 'read',
    parameters: z.object({ row: z.number().int() }),
    async execute(args) {
      return Array.from(
        { length: 60 },
        (_, i) => `row ${args.row}.${i}: latency ${(args.row * 13 + i) % 300} ms`,
      ).join('\n');
    },
  });
  const flaky = defineTool({
    name: 'flaky',
    description: 'Fails transiently before it answers',
    effect: 'read',
    parameters: z.object({ n: z.number().int() }),
    async execute(args, ctx) {
      const seen = (attempts.get(ctx.toolCallId) ?? 0) + 1;
      attempts.set(ctx.toolCallId, seen);
      if (seen <= flakyFailures) throw new ToolFailure('unavailable', 'HTTP 503', { transient: true });
      return { n: args.n, ok: true };
    },
  });
  return { executed, tools: new Map<string, AnyTool>([...base, ['report', report], ['flaky', flaky]]) };
}

const callSpec = fc.oneof(
  { weight: 4, arbitrary: fc.record({ name: fc.constant('report'), args: fc.record({ row: fc.nat(99) }) }) },
  { weight: 2, arbitrary: fc.record({ name: fc.constant('flaky'), args: fc.record({ n: fc.nat(9) }) }) },
  { weight: 1, arbitrary: fc.record({ name: fc.constant('lookup'), args: fc.constant({ service: 42 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      name: fc.constant('restart'),
      args: fc.constantFrom({ service: 'payments' }, { service: 'search' }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      name: fc.constant('announce'),
      args: fc.record({ text: fc.constantFrom('hi', 'done') }),
    }),
  },
);
// An empty answer goes back to the model (a correction note joins the history); a real answer ends the run.
const turnSpec = fc.oneof(
  { weight: 1, arbitrary: fc.record({ text: fc.constant('') }) },
  { weight: 12, arbitrary: fc.record({ calls: fc.array(callSpec, { minLength: 1, maxLength: 3 }) }) },
);
const decisionSpec = fc.constantFrom('approve', 'approve_wrong_hash', 'reject', 'expire', 'unknown');

function decide(plan: string, toolCallId: string, hash: string): Decision {
  switch (plan) {
    case 'approve':
      return { toolCallId, kind: 'approved', argsHash: hash, by: 'UMGR' };
    case 'approve_wrong_hash':
      return { toolCallId, kind: 'approved', argsHash: argsHash({ other: true }), by: 'UMGR' };
    case 'reject':
      return { toolCallId, kind: 'rejected', by: 'UMGR', reason: 'no' };
    case 'expire':
      return { toolCallId, kind: 'expired' };
    default:
      return { toolCallId, kind: 'outcome_unknown' };
  }
}

describe('compaction keeps the engine invariants', () => {
  it('pairs every call with its results in what the model sees, and runs nothing gated unapproved', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(turnSpec, { minLength: 5, maxLength: 40 }),
        fc.array(decisionSpec, { minLength: 1, maxLength: 20 }),
        fc.record({
          window: fc.integer({ min: 5_000, max: 12_000 }),
          percent: fc.integer({ min: 40, max: 90 }),
          factor: fc.constantFrom(1, 1.2, 1.5),
          flakyFailures: fc.integer({ min: 0, max: 3 }),
          reload: fc.boolean(),
          keepResults: fc.boolean(),
          // Agent requests the server refuses as too long whatever their size (another tokenizer).
          refuse: fc.uniqueArray(fc.nat(40), { maxLength: 4 }),
        }),
        async (turns, decisionPlan, o) => {
          const script: ScriptStep[] = turns.map((t) =>
            'calls' in t ? { calls: t.calls } : { text: t.text },
          );
          script.push({ text: 'Final.' }, { text: 'Final.' }, { text: 'Final.' });
          const server = windowModel(script, { windowTokens: o.window, tokenFactor: o.factor });
          let agentRequests = 0;
          let refused = 0;
          const model: ModelPort = {
            model: server.model,
            async complete(req) {
              if (!isSummaryRequest(req) && o.refuse.includes(agentRequests++)) {
                refused++;
                const problem = pairingProblem(req.messages);
                if (problem) server.problems.push(problem);
                throw new ModelError('context_length_exceeded', {
                  status: 400,
                  retryable: false,
                  contextExceeded: true,
                });
              }
              return server.complete(req);
            },
          };
          const { tools: runTools, executed } = tools(o.flakyFailures);
          const { deps: d } = deps(model, {
            tools: runTools,
            sleep: async () => {},
            ...(o.keepResults ? { results: memoryResultStore() } : {}),
          });
          const decided = new Map<string, Decision>();
          let state: RunState = newRun({
            maxSteps: 60,
            maxTokens: 100_000_000,
            maxCostUsd: 10_000,
            maxConsecutiveToolErrors: 10,
            maxAnswerRetries: 2,
            maxObservationChars: 2_000,
            context: contextLimits({
              windowTokens: o.window,
              compactAtPercent: o.percent,
              summaryTokens: 300,
            }),
          });
          let decisions = 0;
          let stored = state.messages.length;
          for (let guard = 0; guard < 300 && !state.stopReason; guard++) {
            if (o.reload) state = JSON.parse(JSON.stringify(state)) as RunState;
            if (state.status === 'running') {
              state = (await step(state, d)).state;
            } else {
              const g = state.turn!.pending[0]!;
              const decision = decide(
                decisionPlan[decisions++ % decisionPlan.length]!,
                g.toolCallId,
                g.argsHash,
              );
              decided.set(g.toolCallId, decision);
              state = (await applyDecisions(state, [decision], d)).state;
            }
            assertWellFormed(state);
            // The history only grows; compactions only move their cut forward.
            expect(state.messages.length).toBeGreaterThanOrEqual(stored);
            stored = state.messages.length;
            const cuts = (state.compactions ?? []).map((c) => c.upTo);
            expect(cuts).toEqual([...cuts].sort((a, b) => a - b));
          }
          expect(state.stopReason).not.toBeNull();
          expect(server.problems).toEqual([]);
          // Every model request answered every tool call the model had made before it.
          for (const req of server.requests) {
            const calls = req.messages.flatMap((m) =>
              m.role === 'assistant' ? (m.toolCalls ?? []).map((c) => c.id) : [],
            );
            const results = req.messages.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : []));
            expect(results).toEqual(calls);
          }
          // Gated calls: only with an approval of exactly their arguments, never twice.
          const gated = executed.filter((e) => e.tool === 'restart' || e.tool === 'announce');
          expect(new Set(gated.map((e) => e.key)).size).toBe(gated.length);
          for (const e of gated) {
            const decision = decided.get(e.key.slice('run1:'.length));
            expect(decision?.kind).toBe('approved');
            expect(decision?.kind === 'approved' && decision.argsHash).toBe(argsHash(e.args));
          }
          // A refused request is compacted and sent again; only refusals in a row end the run.
          if (state.stopReason === 'context_overflow') expect(refused + server.refused).toBeGreaterThan(0);
        },
      ),
      { numRuns: 60 },
    );
  }, 120_000);
});
