import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { applyDecisions } from '../../src/loop/decisions.js';
import { defineTool } from '../../src/loop/define-tool.js';
import type { EngineEvent } from '../../src/loop/engine-events.js';
import type { GatedCall } from '../../src/loop/gated-calls.js';
import type { ExecutionLedger } from '../../src/loop/ports.js';
import { step } from '../../src/loop/step.js';
import type { AnyTool } from '../../src/loop/tool-contract.js';
import { call, manualClock, newRun, scriptedModel, silentLogger } from '../support/engine.js';

/** A tool that settles after `ms` of real time, or fails as soon as its signal aborts. */
function settlesAfter(name: string, effect: 'read' | 'write', ms: number): AnyTool {
  return defineTool({
    name,
    description: `${name} settles after ${ms} ms`,
    effect,
    parameters: z.object({}),
    execute: (_args, ctx) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => resolve(`${name} done`), ms);
        ctx.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(ctx.signal.reason);
        });
      }),
    ...(effect === 'write' && {
      verify: async () => ({ ok: false, summary: `${name} not visible yet` }),
    }),
  });
}

/** A run that read `read` and paused on `write` in the same turn, with 20 ms of its deadline left. */
async function pausedAfterRead(read: AnyTool, write: AnyTool, ledger?: ExecutionLedger) {
  const events: EngineEvent[] = [];
  const clock = manualClock();
  const deps = {
    model: scriptedModel([
      { calls: [call(read.name, {}, 'r1'), call(write.name, {}, 'w1')] },
      { text: 'Done.' },
    ]),
    tools: new Map([read, write].map((t) => [t.name, t])),
    clock,
    emit: (e: EngineEvent) => events.push(e),
    logger: silentLogger,
    ...(ledger && { ledger }),
  };
  const run = newRun({ deadlineMs: 60_000, toolTimeoutMs: 10_000 });
  const out = await step(run, { ...deps, clock: { now: () => clock.now() + 59_980 } });
  if (out.type !== 'interruption') throw new Error(`expected a pause, got ${out.type}`);
  return { state: out.state, gated: out.gated[0] as GatedCall, deps, events };
}

const approve = (g: GatedCall) =>
  ({ toolCallId: g.toolCallId, kind: 'approved', argsHash: g.argsHash, by: 'UAPPROVER' }) as const;

describe('one execution pipeline for reads and approved calls', () => {
  it('tells the same events of a read and of an approved call, and keeps evidence of both', async () => {
    const read = settlesAfter('probe', 'read', 1);
    const write = settlesAfter('deploy', 'write', 1);
    const { state, gated, deps, events } = await pausedAfterRead(read, write);
    const out = await applyDecisions(state, [approve(gated)], deps);

    const toolEvents = events.filter((e) => e.type === 'tool_started' || e.type === 'tool_finished');
    expect(toolEvents.map((e) => [e.type, 'tool' in e && e.tool])).toEqual([
      ['tool_started', 'probe'],
      ['tool_finished', 'probe'],
      ['tool_started', 'deploy'],
      ['tool_finished', 'deploy'],
    ]);
    const [readStart, readEnd, writeStart, writeEnd] = toolEvents;
    expect(Object.keys(readStart!).sort()).toEqual(Object.keys(writeStart!).sort());
    expect(Object.keys(readEnd!).sort()).toEqual(Object.keys(writeEnd!).sort());
    expect(out.state.evidence.map((e) => [e.tool, e.kind, e.ok])).toEqual([
      ['probe', 'result', true],
      ['deploy', 'result', true],
      ['deploy', 'verification', false],
    ]);
  });

  it("cuts a read short at the run's deadline but lets an approved call finish", async () => {
    // Both settle after 200 ms; the run has 20 ms left and a 10 s tool timeout.
    const read = settlesAfter('probe', 'read', 200);
    const write = settlesAfter('deploy', 'write', 200);
    const { state, gated, deps } = await pausedAfterRead(read, write);
    const readResult = state.turn!.slots.find((s) => s.tool === 'probe')!.result!;
    expect(readResult.ok ? 'ok' : readResult.error.code).toBe('timeout');

    const out = await applyDecisions(state, [approve(gated)], deps);
    const deployed = out.state.actions.find((a) => a.tool === 'deploy')!;
    expect(deployed.outcome).toBe('succeeded');
  });

  it('records an approved call in the ledger before telling anyone it finished', async () => {
    const order: string[] = [];
    const ledger: ExecutionLedger = {
      async begin() {
        return { proceed: true };
      },
      async finish(_call, result) {
        order.push(`ledger ${result.ok ? 'ok' : 'failed'}`);
      },
    };
    const { state, gated, deps } = await pausedAfterRead(
      settlesAfter('probe', 'read', 1),
      settlesAfter('deploy', 'write', 1),
      ledger,
    );
    await applyDecisions(state, [approve(gated)], {
      ...deps,
      emit: (e: EngineEvent) => {
        if (e.type === 'tool_started' || e.type === 'tool_finished') order.push(e.type);
      },
    });
    expect(order).toEqual(['tool_started', 'ledger ok', 'tool_finished']);
  });

  it('tells no one an approved call finished when the ledger cannot record it', async () => {
    const ledger: ExecutionLedger = {
      async begin() {
        return { proceed: true };
      },
      async finish() {
        throw new Error('Redis unreachable');
      },
    };
    const { state, gated, deps, events } = await pausedAfterRead(
      settlesAfter('probe', 'read', 1),
      settlesAfter('deploy', 'write', 1),
      ledger,
    );
    await expect(applyDecisions(state, [approve(gated)], deps)).rejects.toThrow('Redis unreachable');
    const deploy = events.filter((e) => 'tool' in e && e.tool === 'deploy').map((e) => e.type);
    expect(deploy).toContain('tool_started');
    expect(deploy).not.toContain('tool_finished');
  });
});
