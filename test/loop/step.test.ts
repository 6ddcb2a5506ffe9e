import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { applyDecisions, cancelRun } from '../../src/loop/decisions.js';
import { defineTool } from '../../src/loop/define-tool.js';
import { requestTokens, textTokens } from '../../src/loop/estimate.js';
import type { Message } from '../../src/loop/messages.js';
import type { ModelPort } from '../../src/loop/model-port.js';
import { decideAndContinue, runUntilPause } from '../../src/loop/run.js';
import type { RunLimits } from '../../src/loop/run-limits.js';
import type { RunState } from '../../src/loop/run-state.js';
import { MAX_SHOWN_ARGUMENT_CHARS } from '../../src/loop/shown-arguments.js';
import { step } from '../../src/loop/step.js';
import type { ToolResult } from '../../src/loop/tool-result.js';
import { assertWellFormed, call, deps, newRun, scriptedModel } from '../support/engine.js';

const toolResults = (s: RunState) =>
  s.messages
    .filter((m): m is Extract<Message, { role: 'tool' }> => m.role === 'tool')
    .map((m) => JSON.parse(m.content) as ToolResult);
const lastResult = (s: RunState) => toolResults(s).at(-1)!;
const errorCode = (r: ToolResult) => (r.ok ? 'ok' : r.error.code);

describe('step: answers and read tools', () => {
  it('completes with a plain answer', async () => {
    const { deps: d, events } = deps(scriptedModel([{ text: 'All good.' }]));
    const out = await runUntilPause(newRun(), d);
    expect(out.type).toBe('final');
    expect(out.state.status).toBe('completed');
    expect(out.state.stopReason).toBe('completed');
    expect(out.state.answer).toEqual(['All good.']);
    expect(events.at(-1)).toMatchObject({ type: 'finished', stopReason: 'completed' });
  });

  it('executes a read tool and shows its result to the model before the next call', async () => {
    const model = scriptedModel([
      { calls: [call('lookup', { service: 'payments' })] },
      { text: 'payments is ok' },
    ]);
    const { deps: d, executed } = deps(model);
    const out = await runUntilPause(newRun(), d);
    expect(out.state.status).toBe('completed');
    expect(executed).toHaveLength(1);
    const second = model.requests[1]!.messages;
    const toolMsg = second.at(-1)!;
    expect(toolMsg.role).toBe('tool');
    expect(JSON.parse((toolMsg as { content: string }).content)).toEqual({
      ok: true,
      data: { service: 'payments', status: 'ok' },
    });
    expect(out.state.evidence[0]).toMatchObject({ tool: 'lookup', kind: 'result', ok: true });
    assertWellFormed(out.state);
  });

  it('sends zod-made JSON Schemas of the tools to the model', async () => {
    const model = scriptedModel([{ text: 'ok' }]);
    await runUntilPause(newRun(), deps(model).deps);
    const lookup = model.requests[0]!.tools.find((t) => t.name === 'lookup')!;
    expect(lookup.parameters).toMatchObject({
      type: 'object',
      properties: { service: { type: 'string' } },
      required: ['service'],
    });
    expect(lookup.parameters).not.toHaveProperty('$schema');
  });

  it('runs parallel read calls concurrently and appends results in call order', async () => {
    const model = scriptedModel([
      { calls: [call('slow'), call('lookup', { service: 'a' }), call('noop')] },
      { text: 'done' },
    ]);
    const { deps: d } = deps(model);
    const t0 = performance.now();
    const out = await runUntilPause(newRun(), d);
    // Well under the slow tool's 10 s: the step abandons it at its 30 ms timeout.
    expect(performance.now() - t0).toBeLessThan(5_000);
    expect(toolResults(out.state).map(errorCode)).toEqual(['timeout', 'ok', 'ok']);
    assertWellFormed(out.state);
  });

  it('turns unknown tools, bad JSON, schema failures, throws and timeouts into results the model reads', async () => {
    const model = scriptedModel([
      {
        calls: [
          call('nope'),
          call('lookup', '{"service":'),
          call('lookup', { service: 3 }),
          call('broken'),
          call('slow'),
        ],
      },
      { text: 'sorry' },
    ]);
    const out = await runUntilPause(newRun({ maxConsecutiveToolErrors: 10 }), deps(model).deps);
    const results = toolResults(out.state);
    expect(results.map(errorCode)).toEqual([
      'unknown_tool',
      'invalid_json',
      'invalid_arguments',
      'tool_failed',
      'timeout',
    ]);
    const [unknown, , schema, thrown, timeout] = results as Array<Extract<ToolResult, { ok: false }>>;
    expect(unknown!.error.message).toContain('Available tools: lookup');
    expect(schema!.error.message).toMatch(/service: .*expected string/);
    expect(thrown!.error.message).toContain('backend unavailable');
    expect(timeout!.error.message).toContain('30 ms');
    expect(out.state.status).toBe('completed');
  });

  it('bounds a huge observation, keeping head, tail and the total size', async () => {
    const model = scriptedModel([{ calls: [call('big', { size: 5_000_000 })] }, { text: 'a big log' }]);
    const out = await runUntilPause(newRun({ maxObservationChars: 1000 }), deps(model).deps);
    const msg = out.state.messages.find((m) => m.role === 'tool')!;
    expect(msg.content.length).toBeLessThan(1400);
    const r = JSON.parse(msg.content) as Extract<ToolResult, { ok: true }>;
    expect(r.truncated).toEqual({ totalChars: 5_000_000, keptHeadChars: 666, keptTailChars: 334 });
    expect(r.data).toContain('of 5000000 characters');
  });

  it('gives tool calls run-unique ids even when the model reuses them', async () => {
    const model = scriptedModel([
      { calls: [call('noop', {}, 'call_0'), call('noop', {}, 'call_0')] },
      { calls: [call('lookup', { service: 'x' }, 'call_0')] },
      { text: 'ok' },
    ]);
    const out = await runUntilPause(newRun(), deps(model).deps);
    assertWellFormed(out.state);
  });
});

describe('hostile argument shapes', () => {
  const deepArray = '['.repeat(10_000) + ']'.repeat(10_000);
  const deepObject = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;

  it('answers deeply nested arguments to a read and a gated tool with invalid_arguments, and the run goes on', async () => {
    const model = scriptedModel([
      { calls: [call('lookup', deepArray), call('restart', deepArray)] },
      { calls: [call('lookup', deepObject), call('announce', `{"text":${deepArray}}`)] },
      { calls: [call('lookup', { service: 'payments' })] },
      { text: 'payments is ok' },
    ]);
    const { deps: d, executed } = deps(model);
    const out = await runUntilPause(newRun({ maxConsecutiveToolErrors: 10 }), d);
    expect(out.state).toMatchObject({ status: 'completed', stopReason: 'completed' });
    expect(toolResults(out.state).map(errorCode)).toEqual([
      'invalid_arguments',
      'invalid_arguments',
      'invalid_arguments',
      'invalid_arguments',
      'ok',
    ]);
    expect(toolResults(out.state)[0]).toMatchObject({
      error: { message: expect.stringContaining('more than the 64 allowed') },
    });
    expect(executed).toEqual([{ tool: 'lookup', args: { service: 'payments' }, key: '' }]);
    assertWellFormed(out.state);
  });

  it('refuses arguments longer than the bound before parsing them', async () => {
    const huge = JSON.stringify({ service: 'x'.repeat(300_000) });
    const model = scriptedModel([{ calls: [call('lookup', huge)] }, { text: 'ok' }]);
    const out = await runUntilPause(newRun(), deps(model).deps);
    expect(lastResult(out.state)).toMatchObject({
      ok: false,
      error: { code: 'invalid_arguments', message: expect.stringContaining('more than the 262144 allowed') },
    });
    expect(out.state.stopReason).toBe('completed');
  });

  it('turns a throw while checking arguments into invalid_arguments', async () => {
    const { deps: d } = deps(scriptedModel([]));
    const throwing = defineTool({
      name: 'fragile',
      description: 'A schema whose own code throws',
      effect: 'write',
      parameters: z.object({ n: z.number() }).transform(() => {
        throw new RangeError('Maximum call stack size exceeded');
      }),
      async execute() {
        return 'unreached';
      },
    });
    const model = scriptedModel([{ calls: [call('fragile', { n: 1 })] }, { text: 'ok' }]);
    const tools = new Map([...d.tools, ['fragile', throwing]]);
    const out = await runUntilPause(newRun(), { ...d, model, tools });
    expect(lastResult(out.state)).toMatchObject({
      ok: false,
      error: { code: 'invalid_arguments', message: expect.stringContaining('Maximum call stack') },
    });
    expect(out.state.stopReason).toBe('completed');
  });
});

describe('gated calls and decisions', () => {
  const restartScript = () =>
    scriptedModel([
      { calls: [call('restart', { service: 'payments' })], text: 'Payments is down; restarting it.' },
      (req) => ({
        text: `Result: ${req.messages.at(-1)!.role === 'tool' ? (req.messages.at(-1) as { content: string }).content : ''}`,
      }),
    ]);

  it('refuses a gated call too long to show an approver as invalid_arguments, asking nobody', async () => {
    const text = 'x'.repeat(MAX_SHOWN_ARGUMENT_CHARS);
    const {
      deps: d,
      executed,
      events,
    } = deps(scriptedModel([{ calls: [call('announce', { text })] }, { text: 'I could not post it.' }]));
    const out = await runUntilPause(newRun(), d);
    expect(out.type).toBe('final');
    expect(executed).toHaveLength(0);
    expect(events.some((e) => e.type === 'approval_needed')).toBe(false);
    const result = toolResults(out.state)[0]!;
    expect(errorCode(result)).toBe('invalid_arguments');
    expect(result.ok ? '' : result.error.message).toBe(
      `The arguments of announce are too long to show an approver: ${MAX_SHOWN_ARGUMENT_CHARS + 11} chars, limit ${MAX_SHOWN_ARGUMENT_CHARS}. Send shorter arguments, or split the work into several smaller calls.`,
    );
    assertWellFormed(out.state);
  });

  it('pauses on a write call with its hash, preview and the model reason, executing nothing', async () => {
    const { deps: d, executed, events } = deps(restartScript());
    const out = await runUntilPause(newRun(), d);
    expect(out.type).toBe('interruption');
    if (out.type !== 'interruption') return;
    expect(out.state.status).toBe('awaiting_approval');
    expect(executed).toHaveLength(0);
    expect(out.gated).toHaveLength(1);
    expect(out.gated[0]).toMatchObject({
      tool: 'restart',
      effect: 'write',
      args: { service: 'payments' },
      preview: 'POST /restart/payments',
      reason: 'Payments is down; restarting it.',
    });
    expect(out.gated[0]!.argsHash).toMatch(/^[0-9a-f]{64}$/);
    expect(events.some((e) => e.type === 'approval_needed')).toBe(true);
    // A paused run is plain JSON.
    expect(JSON.parse(JSON.stringify(out.state))).toEqual(out.state);
  });

  it('executes an approved call once with its idempotency key, verifies it, and continues', async () => {
    const { deps: d, executed } = deps(restartScript());
    const paused = await runUntilPause(newRun(), d);
    if (paused.type !== 'interruption') throw new Error('expected a pause');
    const g = paused.gated[0]!;
    const out = await decideAndContinue(
      paused.state,
      [{ toolCallId: g.toolCallId, kind: 'approved', argsHash: g.argsHash, by: 'UMGR' }],
      d,
    );
    expect(out.state.status).toBe('completed');
    expect(executed).toEqual([
      { tool: 'restart', args: { service: 'payments' }, key: `run1:${g.toolCallId}` },
    ]);
    const r = lastResult(out.state);
    expect(r).toMatchObject({
      ok: true,
      data: { restarted: 'payments' },
      verification: { ok: true, summary: 'payments healthy' },
    });
    expect(out.state.actions).toEqual([
      expect.objectContaining({ tool: 'restart', outcome: 'succeeded', decidedBy: 'UMGR' }),
    ]);
    expect(out.state.evidence.map((e) => e.kind)).toEqual(['result', 'verification']);
  });

  it('never executes an approval whose hash does not match the shown arguments', async () => {
    const { deps: d, executed } = deps(restartScript());
    const paused = await runUntilPause(newRun(), d);
    if (paused.type !== 'interruption') throw new Error('expected a pause');
    const out = await decideAndContinue(
      paused.state,
      [{ toolCallId: paused.gated[0]!.toolCallId, kind: 'approved', argsHash: 'f'.repeat(64) }],
      d,
    );
    expect(executed).toHaveLength(0);
    expect(errorCode(toolResults(out.state)[0]!)).toBe('approval_mismatch');
  });

  it('feeds a rejection back with who and why, and refuses the identical call again without asking', async () => {
    const model = scriptedModel([
      { calls: [call('restart', { service: 'payments' })] },
      { calls: [call('restart', { service: 'payments' })] },
      { text: 'I did not restart payments: it was rejected.' },
    ]);
    const { deps: d, executed } = deps(model);
    const paused = await runUntilPause(newRun(), d);
    if (paused.type !== 'interruption') throw new Error('expected a pause');
    const out = await decideAndContinue(
      paused.state,
      [{ toolCallId: paused.gated[0]!.toolCallId, kind: 'rejected', by: 'UMGR', reason: 'peak hours' }],
      d,
    );
    expect(out.type).toBe('final');
    expect(executed).toHaveLength(0);
    const [first, second] = toolResults(out.state) as Array<Extract<ToolResult, { ok: false }>>;
    expect(first!.error).toEqual({
      code: 'rejected',
      message:
        'Not executed: restart was rejected by <@UMGR>: peak hours. Do not retry it unless the user asks you to.',
    });
    expect(second!.error.code).toBe('rejected_before');
    expect(second!.error.message).toContain('peak hours');
    expect(out.state.status).toBe('completed');
  });

  it('turns expiry and cancellation of a pending call into results', async () => {
    const { deps: d } = deps(restartScript());
    const paused = await runUntilPause(newRun(), d);
    if (paused.type !== 'interruption') throw new Error('expected a pause');
    const expired = await applyDecisions(
      paused.state,
      [{ toolCallId: paused.gated[0]!.toolCallId, kind: 'expired' }],
      d,
    );
    expect(errorCode(lastResult(expired.state))).toBe('expired');
    const cancelled = cancelRun(paused.state, d, 'UREQ');
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.stopReason).toBe('cancelled');
    expect(errorCode(lastResult(cancelled))).toBe('cancelled');
    expect(cancelled.actions[0]!.outcome).toBe('cancelled');
    assertWellFormed(cancelled);
  });

  it('decides parallel gated calls one by one and keeps read results in call order', async () => {
    const model = scriptedModel([
      {
        calls: [
          call('lookup', { service: 'a' }),
          call('restart', { service: 'search' }),
          call('noop'),
          call('announce', { text: 'hi' }),
        ],
      },
      { text: 'Restarted search; the announcement was rejected, so nothing was posted.' },
    ]);
    const { deps: d, executed } = deps(model);
    const paused = await runUntilPause(newRun(), d);
    if (paused.type !== 'interruption') throw new Error('expected a pause');
    expect(paused.gated.map((g) => g.tool)).toEqual(['restart', 'announce']);
    const [restart, announce] = paused.gated;
    const half = await applyDecisions(
      paused.state,
      [{ toolCallId: announce!.toolCallId, kind: 'rejected', by: 'UMGR' }],
      d,
    );
    expect(half.type).toBe('interruption');
    expect(half.state.status).toBe('awaiting_approval');
    expect(executed.filter((e) => e.tool !== 'lookup')).toHaveLength(0);
    // A repeated decision for an already decided call changes nothing.
    const again = await applyDecisions(
      half.state,
      [{ toolCallId: announce!.toolCallId, kind: 'approved', argsHash: announce!.argsHash }],
      d,
    );
    expect(again.state.turn!.pending).toHaveLength(1);
    const out = await decideAndContinue(
      again.state,
      [{ toolCallId: restart!.toolCallId, kind: 'approved', argsHash: restart!.argsHash }],
      d,
    );
    expect(out.state.status).toBe('completed');
    expect(toolResults(out.state).map(errorCode)).toEqual(['ok', 'ok', 'ok', 'rejected']);
    expect(executed.map((e) => e.tool)).toEqual(['lookup', 'restart']);
    assertWellFormed(out.state);
  });

  it('uses the ledger: a call the ledger refuses is not executed again', async () => {
    const ledgerResult: ToolResult = {
      ok: false,
      error: { code: 'outcome_unknown', message: 'already started once' },
    };
    const { deps: d, executed } = deps(restartScript(), {
      ledger: { begin: async () => ({ proceed: false, result: ledgerResult }), finish: async () => {} },
    });
    const paused = await runUntilPause(newRun(), d);
    if (paused.type !== 'interruption') throw new Error('expected a pause');
    const g = paused.gated[0]!;
    const out = await applyDecisions(
      paused.state,
      [{ toolCallId: g.toolCallId, kind: 'approved', argsHash: g.argsHash }],
      d,
    );
    expect(executed).toHaveLength(0);
    expect(lastResult(out.state)).toEqual(ledgerResult);
  });
});

describe('flood caps', () => {
  it('answers every call past maxToolCallsPerReply with too_many_calls and runs none of them', async () => {
    const calls = Array.from({ length: 20 }, (_, i) => call('lookup', { service: `s${i}` }));
    const model = scriptedModel([{ calls }, { text: 'done' }]);
    const { deps: d, executed } = deps(model);
    const out = await runUntilPause(newRun(), d);
    expect(out.state.stopReason).toBe('completed');
    expect(executed).toHaveLength(16);
    const results = toolResults(out.state);
    expect(results.map(errorCode)).toEqual([...Array(16).fill('ok'), ...Array(4).fill('too_many_calls')]);
    expect(results[16]).toMatchObject({
      error: {
        message: 'Not executed: at most 16 tool calls per reply; this was call 17. Send fewer calls.',
      },
    });
    assertWellFormed(out.state);
  });

  it('puts at most maxGatedCallsPerPause gated calls to people; the others get too_many_calls', async () => {
    const calls = [
      call('lookup', { service: 'a' }),
      ...Array.from({ length: 4 }, (_, i) => call('announce', { text: `note ${i}` })),
    ];
    const model = scriptedModel([{ calls }]);
    const { deps: d, events } = deps(model);
    const out = await runUntilPause(newRun({ maxGatedCallsPerPause: 2 }), d);
    if (out.type !== 'interruption') throw new Error('expected a pause');
    expect(out.gated.map((g) => g.args)).toEqual([{ text: 'note 0' }, { text: 'note 1' }]);
    expect(events.filter((e) => e.type === 'approval_needed')).toHaveLength(1);
    const slots = out.state.turn!.slots.map((s) => (s.result ? errorCode(s.result) : 'pending'));
    expect(slots).toEqual(['ok', 'pending', 'pending', 'too_many_calls', 'too_many_calls']);
    expect(out.state.turn!.slots[3]!.result).toMatchObject({
      error: { message: expect.stringContaining('at most 2 calls needing approval per reply') },
    });
  });
});

describe('budgets and brakes', () => {
  it('stops at max_steps without calling the model again', async () => {
    const model = scriptedModel(
      Array.from({ length: 5 }, (_, i) => ({ calls: [call('lookup', { service: `s${i}` })] })),
    );
    const out = await runUntilPause(newRun({ maxSteps: 3 }), deps(model).deps);
    expect(out.state).toMatchObject({ status: 'stopped', stopReason: 'max_steps', step: 3 });
    expect(model.requests).toHaveLength(3);
    expect(out.state.stopMessage).toBe('Stopped after 3 steps, the most this run may take.');
  });

  it('stops at the deadline, counting only active time', async () => {
    const setup = deps(scriptedModel([]));
    const { clock } = setup;
    const model = scriptedModel([
      () => {
        clock.advance(2_000);
        return { calls: [call('noop')] };
      },
      { text: 'unreached' },
    ]);
    const out = await runUntilPause(newRun({ deadlineMs: 1_000 }, clock.now()), { ...setup.deps, model });
    expect(out.state.stopReason).toBe('deadline');
    expect(out.state.status).toBe('stopped');
  });

  it('does not count time paused for approval against the deadline', async () => {
    const setup = deps(scriptedModel([]));
    const model = scriptedModel([
      { calls: [call('restart', { service: 'payments' })] },
      { text: 'Restarted payments.' },
    ]);
    const d = { ...setup.deps, model };
    const paused = await runUntilPause(newRun({ deadlineMs: 1_000 }, setup.clock.now()), d);
    if (paused.type !== 'interruption') throw new Error('expected a pause');
    setup.clock.advance(86_400_000);
    const g = paused.gated[0]!;
    const out = await decideAndContinue(
      paused.state,
      [{ toolCallId: g.toolCallId, kind: 'approved', argsHash: g.argsHash }],
      d,
    );
    expect(out.state.stopReason).toBe('completed');
  });

  it('stops on the token budget and on the cost budget', async () => {
    const big = { inputTokens: 600, outputTokens: 500 };
    const tokens = await runUntilPause(
      newRun({ maxTokens: 1000 }),
      deps(scriptedModel([{ calls: [call('noop')], usage: big }, { text: 'x' }])).deps,
    );
    expect(tokens.state.stopReason).toBe('token_budget');
    const cost = await runUntilPause(
      newRun({ maxCostUsd: 0.001, prices: { 'test-model': { inputPerMTok: 1, outputPerMTok: 1 } } }),
      deps(scriptedModel([{ calls: [call('noop')], usage: big }, { text: 'x' }])).deps,
    );
    expect(cost.state.stopReason).toBe('cost_budget');
    expect(cost.state.usage.costUsd).toBeCloseTo(0.0011, 6);
  });

  it('bounds each reply by the per-reply cap, lowered to what is left of the token budget', async () => {
    const model = scriptedModel([
      { calls: [call('noop')], usage: { inputTokens: 4000, outputTokens: 500 } },
      { text: 'ok' },
    ]);
    await runUntilPause(newRun({ maxTokens: 5000, maxReplyTokens: 2000 }), deps(model).deps);
    const second = model.requests[1]!;
    expect(model.requests.map((r) => r.maxOutputTokens)).toEqual([
      2000,
      500 - requestTokens(second.messages, second.tools),
    ]);
  });

  const withHistory = (limits: Partial<RunLimits>, chars: number): RunState => {
    const run = newRun(limits);
    const pasted: Message = { role: 'user', content: 'lorem ipsum dolor sit amet '.repeat(chars / 27) };
    return { ...run, messages: [run.messages[0]!, pasted, ...run.messages.slice(1)] };
  };
  const priced = { prices: { 'test-model': { inputPerMTok: 1, outputPerMTok: 1 } } };

  it('never sends a request whose estimated input exceeds what is left of the token budget', async () => {
    const model = scriptedModel([{ text: 'unreached' }]);
    const out = await runUntilPause(withHistory({ maxTokens: 10_000 }, 200_000), deps(model).deps);
    expect(model.requests).toHaveLength(0);
    expect(out.state).toMatchObject({ status: 'stopped', stopReason: 'token_budget', step: 0 });
    expect(out.state.stopMessage).toMatch(/needs about \d+ input tokens, more than the 10000-token budget/);
  });

  it('never sends a request whose estimated input cost exceeds what is left of the cost budget', async () => {
    const model = scriptedModel([{ text: 'unreached' }]);
    const out = await runUntilPause(withHistory({ ...priced, maxCostUsd: 0.01 }, 200_000), deps(model).deps);
    expect(model.requests).toHaveLength(0);
    expect(out.state).toMatchObject({ status: 'stopped', stopReason: 'cost_budget' });
  });

  it('charges a reply without usage the estimate of its request and its content', async () => {
    const model = scriptedModel([{ text: 'All good.', usage: null }]);
    const out = await runUntilPause(newRun(), deps(model).deps);
    const first = model.requests[0]!;
    expect(out.state.usage).toMatchObject({
      inputTokens: requestTokens(first.messages, first.tools),
      outputTokens: textTokens('All good.'),
    });
  });

  it('lowers the reply bound so input and the whole reply fit the cost budget', async () => {
    const model = scriptedModel([{ text: 'ok', usage: { inputTokens: 100, outputTokens: 5 } }]);
    await runUntilPause(newRun({ ...priced, maxCostUsd: 0.002, maxReplyTokens: 4096 }), deps(model).deps);
    const first = model.requests[0]!;
    expect(first.maxOutputTokens).toBe(2000 - requestTokens(first.messages, first.tools));
  });

  /** A model that never stops calling tools and reports zero usage (how a missing usage used to read). */
  const tirelessModel = (): ModelPort & { calls: number } => {
    const port = {
      model: 'test-model',
      calls: 0,
      async complete() {
        port.calls++;
        return {
          content: 'checking',
          toolCalls: [{ id: 'c', name: 'lookup', arguments: JSON.stringify({ service: `s${port.calls}` }) }],
          usage: { inputTokens: 0, outputTokens: 0 },
          model: 'test-model',
        };
      },
    };
    return port;
  };

  it('charges a reply with zero usage an estimate, so the token budget still ends the run', async () => {
    const model = tirelessModel();
    const out = await runUntilPause(newRun({ maxSteps: 500, maxTokens: 5_000 }), deps(model).deps);
    expect(out.state.stopReason).toBe('token_budget');
    expect(model.calls).toBeLessThan(500);
    expect(out.state.usage.inputTokens).toBeGreaterThan(0);
    expect(out.state.usage.outputTokens).toBeGreaterThan(0);
  });

  it('charges a reply with zero usage an estimate, so the cost budget still ends the run', async () => {
    const model = tirelessModel();
    const out = await runUntilPause(
      newRun({ ...priced, maxSteps: 500, maxTokens: 100_000_000, maxCostUsd: 0.005 }),
      deps(model).deps,
    );
    expect(out.state.stopReason).toBe('cost_budget');
    expect(model.calls).toBeLessThan(500);
    expect(out.state.usage.costUsd).toBeGreaterThan(0);
  });

  it('detects the same call three times in a row and stops without executing it', async () => {
    const model = scriptedModel(
      Array.from({ length: 4 }, () => ({ calls: [call('lookup', { service: 'payments' })] })),
    );
    const { deps: d, executed } = deps(model);
    const out = await runUntilPause(newRun(), d);
    expect(out.state.stopReason).toBe('loop_detected');
    expect(executed).toHaveLength(2);
    expect(errorCode(lastResult(out.state))).toBe('run_stopped');
    assertWellFormed(out.state);
  });

  it('stops after N failed tool calls in a row; a success resets the count', async () => {
    const model = scriptedModel([
      { calls: [call('broken'), call('nope')] },
      { calls: [call('noop')] },
      { calls: [call('broken'), call('slow')] },
      { calls: [call('nope')] },
      { text: 'unreached' },
    ]);
    const out = await runUntilPause(newRun({ maxConsecutiveToolErrors: 3 }), deps(model).deps);
    expect(out.state.stopReason).toBe('tool_errors');
    expect(out.state.step).toBe(4);
  });

  it('ends with model_error when the model port fails', async () => {
    const out = await runUntilPause(
      newRun(),
      deps(scriptedModel([{ throws: new Error('503 after 4 retries') }])).deps,
    );
    expect(out.state).toMatchObject({ status: 'failed', stopReason: 'model_error' });
    expect(out.state.stopMessage).toContain('503 after 4 retries');
  });
});

describe('final answers', () => {
  it('sends an empty answer back to the model, then accepts a good one', async () => {
    const model = scriptedModel([{ text: '  ' }, { text: 'Here it is.' }]);
    const out = await runUntilPause(newRun(), deps(model).deps);
    expect(out.state.answer).toEqual(['Here it is.']);
    expect(model.requests[1]!.messages.at(-1)).toMatchObject({
      role: 'user',
      content: expect.stringContaining('empty'),
    });
  });

  it('refuses an answer claiming a rejected action as done, listing what really happened', async () => {
    const model = scriptedModel([
      { calls: [call('restart', { service: 'payments' })] },
      { text: 'I restarted payments successfully.' },
      { text: 'The restart of payments was rejected, so it did not happen.' },
    ]);
    const { deps: d } = deps(model);
    const paused = await runUntilPause(newRun(), d);
    if (paused.type !== 'interruption') throw new Error('expected a pause');
    const out = await decideAndContinue(
      paused.state,
      [{ toolCallId: paused.gated[0]!.toolCallId, kind: 'rejected', by: 'UMGR' }],
      d,
    );
    expect(out.state.status).toBe('completed');
    const correction = model.requests[2]!.messages.at(-1)!;
    expect(correction.role).toBe('user');
    expect((correction as { content: string }).content).toContain('restart (rejected)');
  });

  it('fails with validation_failed after too many refused answers', async () => {
    const out = await runUntilPause(
      newRun({ maxAnswerRetries: 2 }),
      deps(scriptedModel([{ text: '' }, { text: '' }, { text: '' }])).deps,
    );
    expect(out.state).toMatchObject({ status: 'failed', stopReason: 'validation_failed' });
  });

  it('splits a long answer into Slack-sized parts', async () => {
    const para = `${'word '.repeat(1999)}\n\n`;
    const out = await runUntilPause(newRun(), deps(scriptedModel([{ text: para.repeat(3) }])).deps);
    expect(out.state.answer!.length).toBe(3);
    for (const p of out.state.answer!) expect(p.length).toBeLessThanOrEqual(12_000);
  });

  it('applies extra validators from the deps', async () => {
    const model = scriptedModel([{ text: 'no sources' }, { text: 'see runbook.md:12' }]);
    const out = await runUntilPause(
      newRun(),
      deps(model, { validateAnswer: (a) => (a.includes('.md') ? [] : ['cite a runbook']) }).deps,
    );
    expect(out.state.answer).toEqual(['see runbook.md:12']);
  });
});

describe('crash safety', () => {
  it('checkpoints the model reply before running tools, and a resumed state reuses it', async () => {
    const saved: RunState[] = [];
    const model = scriptedModel([{ calls: [call('lookup', { service: 'a' })] }, { text: 'done' }]);
    const { deps: d } = deps(model, {
      checkpoint: async (s) => {
        saved.push(JSON.parse(JSON.stringify(s)));
      },
    });
    await runUntilPause(newRun(), d);
    const afterReply = saved.find((s) => s.turn !== null)!;
    expect(afterReply.turn!.slots.every((s) => s.result === null)).toBe(true);
    // "Crash" here: resume from the checkpoint with a fresh model; no model call is made for this turn.
    const model2 = scriptedModel([{ text: 'done again' }]);
    const out = await runUntilPause(afterReply, { ...d, model: model2, checkpoint: undefined });
    expect(model2.requests).toHaveLength(1);
    expect(model2.requests[0]!.messages.at(-1)!.role).toBe('tool');
    expect(out.state.answer).toEqual(['done again']);
  });

  it('never saves a run as awaiting approval once its last decision settled the turn', async () => {
    // Such a save, followed by a crash before the next one, left a run waiting for nothing: no
    // decision or child's end was left to apply, so no job moved it on.
    const model = scriptedModel([
      { calls: [call('restart', { service: 'payments' }), call('announce', { text: 'hi' })] },
      { text: 'Done.' },
    ]);
    const { deps: d, executed } = deps(model);
    const paused = await runUntilPause(newRun(), d);
    const [restart, announce] = paused.state.turn!.pending;
    const saved: RunState[] = [];
    const checkpoint = async (s: RunState) => {
      saved.push(structuredClone(s));
    };
    const approve = {
      toolCallId: restart!.toolCallId,
      kind: 'approved' as const,
      argsHash: restart!.argsHash,
    };
    const first = await applyDecisions(paused.state, [approve], { ...d, checkpoint });
    expect(saved.map((s) => [s.status, s.turn?.pending.length])).toEqual([['awaiting_approval', 1]]);
    const reject = { toolCallId: announce!.toolCallId, kind: 'rejected' as const, by: 'UMGR' };
    const settled = await applyDecisions(first.state, [reject], { ...d, checkpoint });
    expect(settled.type).toBe('run_again');
    expect(saved.map((s) => [s.status, s.turn?.pending.length ?? null])).toEqual([
      ['awaiting_approval', 1],
      ['running', null],
    ]);
    expect(saved[1]!.messages.slice(-2).map((m) => m.role)).toEqual(['tool', 'tool']);
    expect(executed.map((e) => e.tool)).toEqual(['restart']);
  });

  it('refuses to step a run that is not running', async () => {
    const { deps: d } = deps(scriptedModel([{ calls: [call('restart', { service: 'payments' })] }]));
    const paused = await runUntilPause(newRun(), d);
    await expect(step(paused.state, d)).rejects.toThrow(/awaiting_approval/);
  });
});
