import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { applyDecisions } from '../../src/loop/decisions.js';
import { defineTool } from '../../src/loop/define-tool.js';
import { resultHandle } from '../../src/loop/large-results.js';
import type { Message } from '../../src/loop/messages.js';
import type { ModelRequest } from '../../src/loop/model-port.js';
import { READ_RESULT } from '../../src/loop/read-result.js';
import { runUntilPause } from '../../src/loop/run.js';
import type { RunState } from '../../src/loop/run-state.js';
import type { AnyTool } from '../../src/loop/tool-contract.js';
import type { ToolResult } from '../../src/loop/tool-result.js';
import { call, deps, newRun, scriptedModel, testTools } from '../support/engine.js';
import { contextLimits, memoryResultStore } from '../support/memory-results.js';

const LOG = Array.from({ length: 3_000 }, (_, i) =>
  i === 2_041 ? `2026-01-01T10:${i} ERROR payments: connection pool exhausted` : `2026-01-01T10:${i} INFO ok`,
).join('\n');

function toolsWithLog(): ReadonlyMap<string, AnyTool> {
  const { tools } = testTools();
  const logs = defineTool({
    name: 'logs',
    description: 'Service logs',
    effect: 'read',
    parameters: z.object({}),
    async execute() {
      return LOG;
    },
  });
  return new Map([...tools, ['logs', logs]]);
}

const toolMessages = (messages: readonly Message[]) =>
  messages.filter((m): m is Extract<Message, { role: 'tool' }> => m.role === 'tool');
const resultOf = (m: Extract<Message, { role: 'tool' }>) => JSON.parse(m.content) as ToolResult;

/** The handle the last tool result of the request offers. */
function handleIn(req: ModelRequest): string {
  const last = resultOf(toolMessages(req.messages).at(-1)!);
  if (!last.ok || !last.truncated?.handle) throw new Error('no handle in the last result');
  return last.truncated.handle;
}

function run(limits = contextLimits()): RunState {
  return newRun({ maxSteps: 8, maxObservationChars: 4_000, context: limits });
}

describe('long results and read_result', () => {
  it('shows lines with their numbers and a handle, keeps the whole text, and pages it with read_result', async () => {
    const store = memoryResultStore();
    const model = scriptedModel([
      { calls: [call('logs')] },
      (req) => ({ calls: [call(READ_RESULT, { handle: handleIn(req), grep: 'error' })] }),
      (req) => {
        const page = resultOf(toolMessages(req.messages).at(-1)!);
        const handle = handleIn({ ...req, messages: req.messages.slice(0, -2) });
        expect(page).toEqual({
          ok: true,
          data: '[lines containing "error" (any case) from line 1 of 3000: 1 shown]\n2042: 2026-01-01T10:2041 ERROR payments: connection pool exhausted\n[no more matches]',
        });
        return { calls: [call(READ_RESULT, { handle, offset: 2_041, lines: 3 })] };
      },
      { text: 'The pool is exhausted (line 2042).' },
    ]);
    const { deps: d } = deps(model, { tools: toolsWithLog(), results: store });
    const out = await runUntilPause(run(), d);
    expect(out.state.stopReason).toBe('completed');

    const cut = resultOf(toolMessages(out.state.messages)[0]!);
    if (!cut.ok) throw new Error('expected ok');
    const handle = resultHandle('run1', toolMessages(out.state.messages)[0]!.toolCallId);
    expect(cut.truncated).toMatchObject({ totalChars: LOG.length, handle, lines: { total: 3_000 } });
    expect(cut.data).toMatch(/^2026-01-01T10:0 INFO ok\n/);
    expect(cut.data).toContain(
      `of 3000 lines, ${LOG.length} characters. The whole result is kept under the handle ${handle}.`,
    );
    expect((cut.data as string).length).toBeLessThanOrEqual(4_000);
    expect(store.texts.get(handle)).toBe(LOG);

    const page = resultOf(toolMessages(out.state.messages)[2]!);
    expect(page).toEqual({
      ok: true,
      data: `[lines 2041-2043 of 3000]\n2026-01-01T10:2040 INFO ok\n2026-01-01T10:2041 ERROR payments: connection pool exhausted\n2026-01-01T10:2042 INFO ok\n[957 more lines: read_result {"handle":"${handle}","offset":2044}]`,
    });
    // The tool is offered from the first request on, the same list every time.
    expect(model.requests.every((r) => r.tools.some((t) => t.name === READ_RESULT))).toBe(true);
  });

  it('answers a bad handle, one of another run, and an unknown one with error results', async () => {
    const store = memoryResultStore();
    const other = resultHandle('another-run', 'lg1_0_call_0');
    const unknown = resultHandle('run1', 'lg9_0_nothing');
    const model = scriptedModel([
      {
        calls: [
          call(READ_RESULT, { handle: 'res_made_up!' }),
          call(READ_RESULT, { handle: other }),
          call(READ_RESULT, { handle: unknown }),
        ],
      },
      { text: 'I could not read it.' },
    ]);
    const { deps: d } = deps(model, { results: store });
    const out = await runUntilPause(newRun({ maxConsecutiveToolErrors: 5, context: contextLimits() }), d);
    const errors = toolMessages(out.state.messages).map((m) => resultOf(m));
    expect(errors.map((e) => (e.ok ? 'ok' : e.error.code))).toEqual([
      'unknown_handle',
      'unknown_handle',
      'unknown_handle',
    ]);
    expect(errors.map((e) => !e.ok && e.error.message)).toEqual([
      expect.stringMatching(/is not a result handle/),
      expect.stringMatching(/belongs to another run/),
      expect.stringMatching(/No kept result has the handle/),
    ]);
  });

  it('refuses an offset past the end as an argument error the model can read', async () => {
    const store = memoryResultStore();
    const model = scriptedModel([
      { calls: [call('logs')] },
      (req) => ({ calls: [call(READ_RESULT, { handle: handleIn(req), offset: 9_999 })] }),
      { text: 'done' },
    ]);
    const { deps: d } = deps(model, { tools: toolsWithLog(), results: store });
    const out = await runUntilPause(run(), d);
    const last = resultOf(toolMessages(out.state.messages).at(-1)!);
    expect(last).toMatchObject({
      ok: false,
      error: { code: 'invalid_arguments', message: expect.stringMatching(/past the end: .* has 3000 lines/) },
    });
  });

  it('cuts without a handle when the run may keep no more, and says why', async () => {
    const store = memoryResultStore();
    const model = scriptedModel([{ calls: [call('logs')] }, { text: 'done' }]);
    const { deps: d } = deps(model, { tools: toolsWithLog(), results: store });
    const out = await runUntilPause(run(contextLimits({ maxStoredBytesPerRun: 10_000 })), d);
    const cut = resultOf(toolMessages(out.state.messages)[0]!);
    expect(cut.ok && cut.truncated?.handle).toBeUndefined();
    expect(cut.ok && cut.data).toContain(
      "could not be kept (this run's kept results would pass 10000 bytes)",
    );
    expect(store.texts.size).toBe(0);
  });

  it('keeps the long result of an approved write too', async () => {
    const store = memoryResultStore();
    const bigWrite = defineTool({
      name: 'deploy',
      description: 'Deploys and returns the build log',
      effect: 'write',
      parameters: z.object({}),
      async execute() {
        return LOG;
      },
    });
    const model = scriptedModel([{ calls: [call('deploy')] }, { text: 'Deployed.' }]);
    const { deps: d } = deps(model, { tools: new Map([['deploy', bigWrite]]), results: store });
    const paused = await runUntilPause(run(), d);
    if (paused.type !== 'interruption') throw new Error('expected a pause');
    const g = paused.gated[0]!;
    const out = await applyDecisions(
      paused.state,
      [{ toolCallId: g.toolCallId, kind: 'approved', argsHash: g.argsHash, by: 'UMGR' }],
      d,
    );
    const cut = resultOf(toolMessages(out.state.messages)[0]!);
    expect(cut.ok && cut.truncated?.handle).toBe(resultHandle('run1', g.toolCallId));
    expect(store.texts.get(resultHandle('run1', g.toolCallId))).toBe(LOG);
  });

  it('offers no read_result and cuts as before when the run keeps no results', async () => {
    for (const extra of [{}, { results: memoryResultStore() }]) {
      const model = scriptedModel([{ calls: [call('logs')] }, { text: 'done' }]);
      const { deps: d } = deps(model, { tools: toolsWithLog(), ...extra });
      // No store given, or a store and a bound of 0 bytes.
      const out = await runUntilPause(run(contextLimits({ maxStoredResultBytes: 0 })), d);
      expect(model.requests[0]!.tools.some((t) => t.name === READ_RESULT)).toBe(false);
      const cut = resultOf(toolMessages(out.state.messages)[0]!);
      expect(cut.ok && cut.data).toContain('…[truncated by loopgate: showing the first');
    }
  });

  it('offers no read_result in a run without tools', async () => {
    const model = scriptedModel([{ text: 'done' }]);
    const { deps: d } = deps(model, { tools: new Map(), results: memoryResultStore() });
    await runUntilPause(run(), d);
    expect(model.requests[0]!.tools).toEqual([]);
  });

  it('refuses more than 5000 lines at once as an argument error', async () => {
    const model = scriptedModel([
      { calls: [call('logs')] },
      (req) => ({ calls: [call(READ_RESULT, { handle: handleIn(req), lines: 5_001 })] }),
      { text: 'done' },
    ]);
    const { deps: d } = deps(model, { tools: toolsWithLog(), results: memoryResultStore() });
    const out = await runUntilPause(run(), d);
    expect(resultOf(toolMessages(out.state.messages).at(-1)!)).toMatchObject({
      ok: false,
      error: { code: 'invalid_arguments', message: expect.stringMatching(/lines/) },
    });
  });
});
