/**
 * The engine's cancelSignal: a cancel aborts the model request and the reads in flight at once and the
 * run stops at the boundary, while an approved write that started runs to its end (design.md §4.3).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/loop/define-tool.js';
import type { Message } from '../../src/loop/messages.js';
import type { ModelRequest } from '../../src/loop/model-port.js';
import { decideAndContinue, runUntilPause } from '../../src/loop/run.js';
import type { ToolResult } from '../../src/loop/tool-result.js';
import { assertWellFormed, call, deps, newRun, scriptedModel } from '../support/engine.js';

/** Resolves once `signal` aborts (never otherwise), like a model server that is slow to answer. */
const untilAborted = (signal: AbortSignal) =>
  new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });

const toolResults = (messages: readonly Message[]) =>
  messages
    .filter((m): m is Extract<Message, { role: 'tool' }> => m.role === 'tool')
    .map((m) => JSON.parse(m.content) as ToolResult);

describe('cancelSignal', () => {
  it('aborts the model request in flight: no reply is used, no further model call, the run stops at once', async () => {
    const cancel = new AbortController();
    let aborted = 0;
    const model = scriptedModel([
      async (req: ModelRequest) => {
        setTimeout(() => cancel.abort(new Error('stop button')), 20);
        await untilAborted(req.signal).catch(() => {
          aborted = performance.now();
        });
        throw new Error('aborted');
      },
      { text: 'never asked' },
    ]);
    const { deps: d } = deps(model, { cancelSignal: cancel.signal });
    const t0 = performance.now();
    const out = await runUntilPause(newRun(), d);
    expect(out.type).toBe('cancel_requested');
    expect(model.requests).toHaveLength(1);
    expect(out.state.status).toBe('running');
    // The abandoned request is not a step: nothing was said by the model.
    expect(out.state.step).toBe(0);
    expect(aborted - t0).toBeLessThan(1_000);
  });

  it('without a cancel the same signal changes nothing', async () => {
    const cancel = new AbortController();
    const model = scriptedModel([{ text: 'All good.' }]);
    const out = await runUntilPause(newRun(), deps(model, { cancelSignal: cancel.signal }).deps);
    expect(out.state.status).toBe('completed');
  });

  it('aborts the reads in flight: each gets a `cancelled` result, no brake counts them, the run stops', async () => {
    const cancel = new AbortController();
    const seenAbort: boolean[] = [];
    const waiting = defineTool({
      name: 'waiting',
      description: 'Waits for its signal',
      effect: 'read',
      timeoutMs: 60_000,
      parameters: z.object({}),
      async execute(_args, ctx) {
        await untilAborted(ctx.signal).catch(() => seenAbort.push(ctx.signal.aborted));
        return 'late';
      },
    });
    const model = scriptedModel([
      { calls: [call('waiting'), call('waiting'), call('lookup', { service: 'a' })] },
      { text: 'never asked' },
    ]);
    const base = deps(model, { cancelSignal: cancel.signal });
    const tools = new Map([...base.deps.tools, ['waiting', waiting]]);
    setTimeout(() => cancel.abort(), 20);
    const t0 = performance.now();
    const out = await runUntilPause(newRun({ maxConsecutiveToolErrors: 2 }), { ...base.deps, tools });
    expect(performance.now() - t0).toBeLessThan(2_000);
    expect(out.type).toBe('cancel_requested');
    expect(model.requests).toHaveLength(1);
    expect(seenAbort).toEqual([true, true]);
    expect(toolResults(out.state.messages).map((r) => (r.ok ? 'ok' : r.error.code))).toEqual([
      'cancelled',
      'cancelled',
      'ok',
    ]);
    expect(out.state.brakes.consecutiveToolErrors).toBe(0);
    assertWellFormed(out.state);
  });

  it('never cuts an approved write in half: a cancel during it lets it finish and records its result', async () => {
    const cancel = new AbortController();
    let finished = false;
    const deploy = defineTool({
      name: 'deploy',
      description: 'Deploys',
      effect: 'write',
      parameters: z.object({ service: z.string() }),
      async execute(args, ctx) {
        cancel.abort();
        await new Promise((r) => setTimeout(r, 50));
        finished = !ctx.signal.aborted;
        return { deployed: args.service };
      },
    });
    const model = scriptedModel([
      { calls: [call('deploy', { service: 'payments' })] },
      { text: 'never asked' },
    ]);
    const base = deps(model, { cancelSignal: cancel.signal });
    const d = { ...base.deps, tools: new Map([...base.deps.tools, ['deploy', deploy]]) };
    const paused = await runUntilPause(newRun(), d);
    expect(paused.type).toBe('interruption');
    const g = paused.type === 'interruption' ? paused.gated[0]! : undefined;
    const out = await decideAndContinue(
      paused.state,
      [{ toolCallId: g!.toolCallId, kind: 'approved', argsHash: g!.argsHash, by: 'UMGR' }],
      d,
    );
    expect(finished).toBe(true);
    expect(toolResults(out.state.messages).at(-1)).toMatchObject({
      ok: true,
      data: { deployed: 'payments' },
    });
    expect(out.state.actions[0]).toMatchObject({ tool: 'deploy', outcome: 'succeeded' });
    // The cancel is honoured at the boundary after it: the model is not asked again.
    expect(out.type).toBe('cancel_requested');
    expect(model.requests).toHaveLength(1);
  });
});
