import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyDecisions } from '../../src/loop/decisions.js';
import type { Decision, GatedCall } from '../../src/loop/gated-calls.js';
import { argsHash } from '../../src/loop/hash.js';
import type { ModelPort } from '../../src/loop/model-port.js';
import type { RunState, StepOutcome } from '../../src/loop/run-state.js';
import { step } from '../../src/loop/step.js';
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
  fc.record({ name: fc.constant('lookup'), args: fc.constant({ service: 42 }) }),
  fc.record({ name: fc.constant('lookup'), args: fc.constant('{"service": ') }),
  fc.record({ name: fc.constantFrom('nope', 'delete_everything'), args: fc.constant({}) }),
  fc.record({ name: fc.constantFrom('noop', 'broken'), args: fc.constant({}) }),
  fc.record({
    name: fc.constant('restart'),
    args: fc.constantFrom({ service: 'payments' }, { service: 'search' }),
  }),
  fc.record({
    name: fc.constant('announce'),
    args: fc.constantFrom({ text: 'hi' }, { text: 'deploy done' }),
  }),
);
const turnSpec = fc.oneof(
  { weight: 1, arbitrary: fc.record({ text: fc.constantFrom('All fine.', '', 'Here is the summary.') }) },
  { weight: 4, arbitrary: fc.record({ calls: fc.array(callSpec, { minLength: 1, maxLength: 4 }) }) },
);
const decisionSpec = fc.constantFrom('approve', 'approve_wrong_hash', 'reject', 'expire', 'unknown');

const roundTrip = (s: RunState) => expect(JSON.parse(JSON.stringify(s))).toEqual(s);

describe('engine invariants under random model behaviour', () => {
  it('every call gets one result in order, nothing gated runs unapproved, budgets hold, runs end', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(turnSpec, { maxLength: 12 }),
        fc.array(decisionSpec, { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 4 }),
        fc.boolean(),
        async (turns, decisionPlan, maxSteps, maxErrors, reverseOrder) => {
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
          const { deps: d, executed } = deps(model);
          const decided = new Map<string, Decision>();
          let state = newRun({ maxSteps, maxConsecutiveToolErrors: maxErrors, maxAnswerRetries: 1 });
          let d_i = 0;
          for (let guard = 0; guard < 200; guard++) {
            roundTrip(state);
            assertWellFormed(state);
            if (state.stopReason) break;
            let outcome: StepOutcome;
            if (state.status === 'running') {
              outcome = await step(state, d);
            } else {
              const pending: GatedCall[] = [...state.turn!.pending];
              if (reverseOrder) pending.reverse();
              const g = pending[0]!;
              const plan = decisionPlan[d_i++ % decisionPlan.length]!;
              const decision: Decision =
                plan === 'approve'
                  ? { toolCallId: g.toolCallId, kind: 'approved', argsHash: g.argsHash, by: 'UMGR' }
                  : plan === 'approve_wrong_hash'
                    ? {
                        toolCallId: g.toolCallId,
                        kind: 'approved',
                        argsHash: argsHash({ other: true }),
                        by: 'UMGR',
                      }
                    : plan === 'reject'
                      ? { toolCallId: g.toolCallId, kind: 'rejected', by: 'UMGR', reason: 'no' }
                      : plan === 'expire'
                        ? { toolCallId: g.toolCallId, kind: 'expired' }
                        : { toolCallId: g.toolCallId, kind: 'outcome_unknown' };
              decided.set(g.toolCallId, decision);
              outcome = await applyDecisions(state, [decision], d);
            }
            state = outcome.state;
            expect(state.step).toBeLessThanOrEqual(maxSteps);
          }
          expect(problems).toEqual([]);
          expect(state.stopReason).not.toBe('model_error');
          // Every run ends, with a reason and a sentence.
          expect(state.stopReason).not.toBeNull();
          expect(state.stopMessage).toBeTruthy();
          expect(['completed', 'failed', 'stopped']).toContain(state.status);
          assertWellFormed(state);
          // No write/notify executed without an approval for exactly its arguments; none twice.
          const gatedRuns = executed.filter((e) => e.tool === 'restart' || e.tool === 'announce');
          const keys = gatedRuns.map((e) => e.key);
          expect(new Set(keys).size).toBe(keys.length);
          for (const e of gatedRuns) {
            const toolCallId = e.key.slice('run1:'.length);
            const decision = decided.get(toolCallId);
            expect(decision?.kind).toBe('approved');
            expect(decision?.kind === 'approved' && decision.argsHash).toBe(argsHash(e.args));
          }
          // Every approval with the right hash executed exactly once.
          const approvedRight = [...decided.values()].filter(
            (x) => x.kind === 'approved' && x.argsHash !== argsHash({ other: true }),
          );
          expect(gatedRuns).toHaveLength(approvedRight.length);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('flood caps under random call counts', () => {
  it('every call id gets exactly one result before the next model call; at most N gated calls reach people', async () => {
    const kinds = fc.array(fc.constantFrom('lookup', 'announce', 'nope'), { maxLength: 40 });
    await fc.assert(
      fc.asyncProperty(
        kinds,
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 6 }),
        async (names, maxCalls, maxGated) => {
          const calls = names.map((name, i) =>
            name === 'announce' ? { name, args: { text: `t${i}` } } : { name, args: { service: `s${i}` } },
          );
          const inner = scriptedModel(
            calls.length > 0 ? [{ calls }, { text: 'Final.' }] : [{ text: 'Final.' }],
          );
          const problems: string[] = [];
          const model: ModelPort = {
            async complete(req) {
              {
                const problem = unansweredCallsProblem(req.messages);
                if (problem) problems.push(problem);
              }
              return inner.complete(req);
            },
          };
          const { deps: d, events } = deps(model);
          let outcome: StepOutcome = await step(
            newRun({
              maxToolCallsPerReply: maxCalls,
              maxGatedCallsPerPause: maxGated,
              maxConsecutiveToolErrors: 100,
            }),
            d,
          );
          for (let guard = 0; guard < 50 && outcome.type !== 'final'; guard++) {
            if (outcome.type === 'interruption') {
              expect(outcome.gated.length).toBeLessThanOrEqual(maxGated);
              const decisions: Decision[] = outcome.gated.map((g) => ({
                toolCallId: g.toolCallId,
                kind: 'approved',
                argsHash: g.argsHash,
                by: 'UMGR',
              }));
              outcome = await applyDecisions(outcome.state, decisions, d);
            } else outcome = await step(outcome.state, d);
          }
          expect(problems).toEqual([]);
          expect(outcome.state.stopReason).toBe('completed');
          assertWellFormed(outcome.state);
          const results = outcome.state.messages.filter((m) => m.role === 'tool');
          expect(results).toHaveLength(calls.length);
          const cards = events.flatMap((e) => (e.type === 'approval_needed' ? e.calls : []));
          expect(cards.length).toBeLessThanOrEqual(maxGated);
          const expectedCards = names.slice(0, maxCalls).filter((n) => n === 'announce').length;
          expect(cards).toHaveLength(Math.min(maxGated, expectedCards));
          const refused = results.filter((m) => JSON.parse(m.content).error?.code === 'too_many_calls');
          expect(refused).toHaveLength(
            calls.length - Math.min(calls.length, maxCalls) + expectedCards - cards.length,
          );
        },
      ),
      { numRuns: 150 },
    );
  });
});
