import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { applyDecisions } from '../../src/loop/decisions.js';
import { defineTool } from '../../src/loop/define-tool.js';
import { ToolFailure } from '../../src/loop/errors.js';
import type { Decision } from '../../src/loop/gated-calls.js';
import type { ModelPort } from '../../src/loop/model-port.js';
import type { StepOutcome } from '../../src/loop/run-state.js';
import { step } from '../../src/loop/step.js';
import type { AnyTool } from '../../src/loop/tool-contract.js';
import {
  assertWellFormed,
  manualClock,
  newRun,
  type ScriptStep,
  scriptedModel,
  silentLogger,
  unansweredCallsProblem,
} from '../support/engine.js';

type Outcome = 'ok' | 'transient' | 'permanent';

const RETRY = { attempts: 3, initialDelayMs: 100, maxDelayMs: 400 };

describe('retries under random transient failures', () => {
  it('one result per call before the next model call; nothing gated unapproved; a non-idempotent write never twice', async () => {
    const callSpec = fc.constantFrom('status', 'deploy', 'page');
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(callSpec, { minLength: 1, maxLength: 3 }), { maxLength: 6 }),
        fc.array(fc.constantFrom<Outcome>('ok', 'transient', 'transient', 'permanent'), { maxLength: 60 }),
        fc.array(fc.constantFrom('approve', 'reject'), { minLength: 1, maxLength: 20 }),
        fc.double({ min: 0, max: 0.999, noNaN: true }),
        async (turns, outcomes, plans, jitter) => {
          const queue = [...outcomes];
          const executions: Array<{ tool: string; key: string }> = [];
          const make = (name: string, effect: AnyTool['effect'], idempotent: boolean) =>
            defineTool({
              name,
              description: name,
              effect,
              idempotent,
              retry: RETRY,
              parameters: z.object({}),
              async execute(_args, ctx) {
                executions.push({ tool: name, key: ctx.idempotencyKey });
                const next = queue.shift() ?? 'ok';
                if (next === 'transient') throw new ToolFailure('busy', '503', { transient: true });
                if (next === 'permanent') throw new ToolFailure('bad', '400');
                return 'done';
              },
            });
          const tools = new Map<string, AnyTool>([
            ['status', make('status', 'read', false)],
            ['deploy', make('deploy', 'write', false)],
            ['page', make('page', 'notify', true)],
          ]);
          const script: ScriptStep[] = turns.map((names) => ({
            calls: names.map((name) => ({ name, args: {} })),
          }));
          const inner = scriptedModel(script);
          const problems: string[] = [];
          const model: ModelPort = {
            async complete(req) {
              {
                const problem = unansweredCallsProblem(req.messages);
                if (problem) problems.push(problem);
              }
              return inner.complete(req).catch(() => ({ content: 'Final.', toolCalls: [], model: 'm' }));
            },
          };
          const clock = manualClock();
          const d = {
            model,
            tools,
            clock,
            emit: () => {},
            logger: silentLogger,
            random: () => jitter,
            sleep: async (ms: number) => clock.advance(ms),
          };
          const approved = new Set<string>();
          let state = newRun({ maxSteps: 8, maxConsecutiveToolErrors: 100 });
          let p = 0;
          for (let guard = 0; guard < 60 && !state.stopReason; guard++) {
            assertWellFormed(state);
            let outcome: StepOutcome;
            if (state.status === 'running') outcome = await step(state, d);
            else {
              const g = state.turn!.pending[0]!;
              const plan = plans[p++ % plans.length];
              const decision: Decision =
                plan === 'approve'
                  ? { toolCallId: g.toolCallId, kind: 'approved', argsHash: g.argsHash, by: 'UMGR' }
                  : { toolCallId: g.toolCallId, kind: 'rejected', by: 'UMGR' };
              if (plan === 'approve') approved.add(`run1:${g.toolCallId}`);
              outcome = await applyDecisions(state, [decision], d);
            }
            state = outcome.state;
          }
          expect(problems).toEqual([]);
          expect(state.stopReason).not.toBe('model_error');
          assertWellFormed(state);
          const perKey = new Map<string, { tool: string; n: number }>();
          for (const e of executions) {
            perKey.set(e.key, { tool: e.tool, n: (perKey.get(e.key)?.n ?? 0) + 1 });
          }
          for (const [key, { tool, n }] of perKey) {
            if (tool !== 'status') expect(approved.has(key), `${tool} ${key} ran unapproved`).toBe(true);
            if (tool === 'deploy') expect(n, `deploy ${key} ran ${n} times`).toBe(1);
            else expect(n).toBeLessThanOrEqual(RETRY.attempts);
          }
          // Each call's result lists exactly the attempts that were retried.
          for (const m of state.messages) {
            if (m.role !== 'tool') continue;
            const result = JSON.parse(m.content) as { attempts?: unknown[] };
            const key = `run1:${m.toolCallId}`;
            const ran = perKey.get(key)?.n ?? 0;
            expect(result.attempts?.length ?? 0).toBe(Math.max(0, ran - 1));
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
