import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { applyDecisions } from '../../src/loop/decisions.js';
import { defineTool } from '../../src/loop/define-tool.js';
import type { EngineEvent } from '../../src/loop/engine-events.js';
import type { Decision, GatedCall, PlanHashes } from '../../src/loop/gated-calls.js';
import { argsHash } from '../../src/loop/hash.js';
import { MAX_PLAN_CHARS, planHash } from '../../src/loop/plan.js';
import type { ExecutionLedger } from '../../src/loop/ports.js';
import type { RunState } from '../../src/loop/run-state.js';
import { step } from '../../src/loop/step.js';
import type { AnyTool } from '../../src/loop/tool-contract.js';
import type { ToolResult } from '../../src/loop/tool-result.js';
import { call, manualClock, newRun, scriptedModel, silentLogger } from '../support/engine.js';

/** A rollout whose plan is whatever the world says now (or a throw), and which records each execution. */
function rollout(world: { plan: () => string }, samePlan?: (a: string, b: string) => boolean) {
  const executed: Array<{ args: unknown; plan: string }> = [];
  const tool: AnyTool = defineTool({
    name: 'rollout',
    description: 'Roll out a version',
    parameters: z.object({ version: z.string() }),
    effect: 'write',
    async execute(args) {
      executed.push({ args, plan: world.plan() });
      return { rolled: args.version };
    },
    async plan(args) {
      return `${world.plan()} -> ${args.version}`;
    },
    ...(samePlan ? { samePlan } : {}),
  });
  return { tool, executed };
}

function recordingLedger() {
  const blocked: Array<{ result: ToolResult; plans: PlanHashes }> = [];
  const begun: Array<PlanHashes | undefined> = [];
  const ledger: ExecutionLedger = {
    async begin(_call, plans) {
      begun.push(plans);
      return { proceed: true };
    },
    async finish() {},
    async unstarted() {
      return true;
    },
    async block(_call, result, plans) {
      blocked.push({ result, plans });
    },
  };
  return { ledger, blocked, begun };
}

async function pausedOn(tool: AnyTool, version = '2.0') {
  const events: EngineEvent[] = [];
  const { ledger, blocked, begun } = recordingLedger();
  const deps = {
    model: scriptedModel([{ calls: [call('rollout', { version }, 'c1')] }, { text: 'Done.' }]),
    tools: new Map([[tool.name, tool]]),
    clock: manualClock(),
    emit: (e: EngineEvent) => events.push(e),
    logger: silentLogger,
    ledger,
  };
  const out = await step(newRun(), deps);
  if (out.type !== 'interruption') throw new Error(`expected a pause, got ${out.type}`);
  return { state: out.state, gated: out.gated[0] as GatedCall, deps, events, blocked, begun };
}

const approve = (g: GatedCall, extra: Partial<Decision> = {}): Decision => ({
  toolCallId: g.toolCallId,
  kind: 'approved',
  argsHash: g.argsHash,
  by: 'UAPPROVER',
  ...(g.plan ? { plan: g.plan } : {}),
  ...extra,
});

const lastToolMessage = (s: RunState) => s.messages.filter((m) => m.role === 'tool').at(-1);

describe('plans bound to the decision', () => {
  it('shows the plan on the gated call, computed when the call is gated', async () => {
    const { gated } = await pausedOn(rollout({ plan: () => 'web: 3 pods 1.9' }).tool);
    expect(gated.plan).toEqual({
      ok: true,
      text: 'web: 3 pods 1.9 -> 2.0',
      hash: planHash('web: 3 pods 1.9 -> 2.0'),
    });
  });

  it('an unchanged plan executes, and the ledger records both plans', async () => {
    const r = rollout({ plan: () => 'v1' });
    const p = await pausedOn(r.tool);
    const out = await applyDecisions(p.state, [approve(p.gated)], p.deps);
    expect(r.executed).toHaveLength(1);
    expect(out.type).toBe('run_again');
    const hash = planHash('v1 -> 2.0');
    expect(p.begun).toEqual([{ approved: hash, current: hash }]);
    expect(p.blocked).toEqual([]);
  });

  it('a plan that changed between approval and execution does not run and asks again with the new plan', async () => {
    let now = 'v1';
    const r = rollout({ plan: () => now });
    const p = await pausedOn(r.tool);
    now = 'v2';
    const out = await applyDecisions(p.state, [approve(p.gated)], p.deps);
    expect(r.executed).toEqual([]);
    expect(out.type).toBe('interruption');
    expect(out.state.status).toBe('awaiting_approval');
    const pending = out.state.turn!.pending;
    expect(pending.map((c) => c.plan)).toEqual([
      { ok: true, text: 'v2 -> 2.0', hash: planHash('v2 -> 2.0') },
    ]);
    expect(p.events.filter((e) => e.type === 'plan_changed')).toHaveLength(1);
    expect(p.blocked.map((b) => b.plans)).toEqual([
      { approved: planHash('v1 -> 2.0'), current: planHash('v2 -> 2.0') },
    ]);
    // The old approval does not carry over: approving what is shown now runs it.
    const again = await applyDecisions(out.state, [approve(pending[0]!)], p.deps);
    expect(r.executed).toEqual([{ args: { version: '2.0' }, plan: 'v2' }]);
    expect(again.type).toBe('run_again');
  });

  it('a plan that fails or times out at execution blocks the call with a clear reason, and the run goes on', async () => {
    let fail = false;
    const r = rollout({
      plan: () => {
        if (fail) throw new Error('kubectl diff: connection refused');
        return 'v1';
      },
    });
    const p = await pausedOn(r.tool);
    fail = true;
    const out = await applyDecisions(p.state, [approve(p.gated)], p.deps);
    expect(r.executed).toEqual([]);
    expect(out.type).toBe('run_again');
    const content = JSON.parse(String(lastToolMessage(out.state)?.content));
    expect(content.ok).toBe(false);
    expect(content.error.code).toBe('plan_failed');
    expect(content.error.message).toContain('kubectl diff: connection refused');
    expect(out.state.actions.map((a) => a.outcome)).toEqual(['not_executed']);
    expect(p.blocked.map((b) => b.plans)).toEqual([{ approved: planHash('v1 -> 2.0'), current: null }]);
  });

  it('a plan that never settles is cut by the timeout and blocks', async () => {
    let hang = false;
    const tool: AnyTool = defineTool({
      name: 'rollout',
      description: 'Roll out',
      parameters: z.object({ version: z.string() }),
      effect: 'write',
      timeoutMs: 50,
      execute: async () => 'ran',
      plan: () => (hang ? new Promise<string>(() => {}) : Promise.resolve('p')),
    });
    const p = await pausedOn(tool);
    hang = true;
    const out = await applyDecisions(p.state, [approve(p.gated)], p.deps);
    const content = JSON.parse(String(lastToolMessage(out.state)?.content));
    expect(content.error.code).toBe('plan_failed');
    expect(content.error.message).toMatch(/timed out|50 ?ms/);
  });

  it('a plan too long to show is a failed plan', async () => {
    const r = rollout({ plan: () => 'x'.repeat(MAX_PLAN_CHARS + 1) });
    const { gated } = await pausedOn(r.tool);
    expect(gated.plan).toMatchObject({ ok: false });
    expect(gated.plan && !gated.plan.ok && gated.plan.error).toContain(`at most ${MAX_PLAN_CHARS}`);
  });

  it('an edit re-plans: the edited arguments run only after their own plan is shown and approved', async () => {
    const r = rollout({ plan: () => 'v1' });
    const p = await pausedOn(r.tool);
    const edited = { args: { version: '2.1' }, by: 'UEDITOR' };
    // The edited round was approved without a plan for the edited arguments.
    const d = approve(p.gated, { argsHash: argsHash(edited.args), edited, plan: undefined });
    const out = await applyDecisions(p.state, [d], p.deps);
    expect(r.executed).toEqual([]);
    expect(out.type).toBe('interruption');
    const asked = out.state.turn!.pending[0]!;
    expect(asked.plan).toMatchObject({ ok: true, text: 'v1 -> 2.1' });
    expect(asked.args).toEqual({ version: '2.0' });
    const again = await applyDecisions(
      out.state,
      [approve(asked, { argsHash: argsHash(edited.args), edited })],
      p.deps,
    );
    expect(r.executed).toEqual([{ args: { version: '2.1' }, plan: 'v1' }]);
    expect(again.type).toBe('run_again');
  });

  it("the tool's samePlan decides what counts as the same plan", async () => {
    let stamp = 'at 10:00';
    const ignoringStamp = (a: string, b: string) =>
      a.replace(/at \d\d:\d\d/, '') === b.replace(/at \d\d:\d\d/, '');
    const r = rollout({ plan: () => `3 pods ${stamp}` }, ignoringStamp);
    const p = await pausedOn(r.tool);
    stamp = 'at 10:05';
    const out = await applyDecisions(p.state, [approve(p.gated)], p.deps);
    expect(r.executed).toHaveLength(1);
    expect(out.type).toBe('run_again');
  });

  it('a call the ledger shows as begun is not planned again (the ledger answers for it)', async () => {
    let plans = 0;
    const tool: AnyTool = defineTool({
      name: 'rollout',
      description: 'Roll out',
      parameters: z.object({ version: z.string() }),
      effect: 'write',
      execute: async () => 'ran',
      plan: async () => `plan ${plans++}`,
    });
    const p = await pausedOn(tool);
    const recorded: ToolResult = { ok: true, data: 'ran before' };
    p.deps.ledger = {
      begin: async () => ({ proceed: false, result: recorded }),
      finish: async () => {},
      unstarted: async () => false,
    };
    const out = await applyDecisions(p.state, [approve(p.gated)], p.deps);
    expect(plans).toBe(1);
    expect(out.type).toBe('run_again');
  });
});

describe('plans bound to the decision (property)', () => {
  // Each plan() call takes the next output; an approval is a click on what the card shows at that moment.
  const output = fc.oneof(fc.constantFrom('a', 'b', 'c'), fc.constant(null));
  it('a call executes only when the plan at execution equals the plan its deciders saw, and then at most once', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(output, { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 1, max: 6 }),
        async (outputs, clicks) => {
          let i = 0;
          let current: string | null = null;
          const next = () => {
            current = outputs[Math.min(i++, outputs.length - 1)] ?? null;
            if (current === null) throw new Error('plan failed');
            return current;
          };
          const executed: Array<string | null> = [];
          const tool: AnyTool = defineTool({
            name: 'rollout',
            description: 'Roll out',
            parameters: z.object({ version: z.string() }),
            effect: 'write',
            execute: async () => {
              executed.push(current);
              return 'ran';
            },
            plan: async () => next(),
          });
          const p = await pausedOn(tool);
          let state = p.state;
          const seen: Array<string | null> = [];
          for (let n = 0; n < clicks && state.status === 'awaiting_approval'; n++) {
            const shown = state.turn!.pending[0]!;
            seen.push(shown.plan?.ok ? shown.plan.text : null);
            state = (await applyDecisions(state, [approve(shown)], p.deps)).state;
          }
          expect(executed.length).toBeLessThanOrEqual(1);
          if (executed.length === 1) {
            // The plan current at execution is the one on the card of the deciding click.
            expect(seen.at(-1)).toBe(executed[0]);
            expect(state.actions.map((a) => a.outcome)).toEqual(['succeeded']);
          }
          if (current === null) expect(executed).toEqual([]);
        },
      ),
      { numRuns: 200 },
    );
  });
});
