import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { applyDecisions } from '../../src/loop/decisions.js';
import { defineTool } from '../../src/loop/define-tool.js';
import type { EngineEvent } from '../../src/loop/engine-events.js';
import { ToolFailure } from '../../src/loop/errors.js';
import { classifyFailure, DEFAULT_RETRY, retryDelayMs } from '../../src/loop/retry.js';
import type { RunState } from '../../src/loop/run-state.js';
import { step } from '../../src/loop/step.js';
import type { AnyTool, RetryPolicy } from '../../src/loop/tool-contract.js';
import type { ToolResult } from '../../src/loop/tool-result.js';
import { HttpStatusError, RequestTimeoutError, ToolError } from '../../src/tools/errors.js';
import { call, deps, newRun, scriptedModel } from '../support/engine.js';

/** A tool failing `failures` times with `fail()` before it answers; counts its executions. */
function flaky(
  name: string,
  effect: AnyTool['effect'],
  failures: number,
  fail: () => Error = () => new HttpStatusError('GET', 'http://svc/x', 503, 'busy'),
  extra: Partial<AnyTool> = {},
) {
  const keys: string[] = [];
  const tool = defineTool({
    name,
    description: name,
    effect,
    parameters: z.object({}),
    async execute(_args, ctx) {
      keys.push(ctx.idempotencyKey);
      if (keys.length <= failures) throw fail();
      return { answered: true };
    },
    ...extra,
  });
  return { tool, keys };
}

/** Engine deps whose sleep advances the manual clock and records each wait: no real waiting. */
function retryWorld(tool: AnyTool, script: Parameters<typeof scriptedModel>[0], random = () => 0.5) {
  const model = scriptedModel(script);
  const base = deps(model);
  const sleeps: number[] = [];
  const d = {
    ...base.deps,
    tools: new Map([...base.deps.tools, [tool.name, tool]]),
    random,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      base.clock.advance(ms);
    },
  };
  return { d, sleeps, events: base.events, model, clock: base.clock };
}

const lastResult = (state: RunState): ToolResult => {
  const tool = state.messages.filter((m) => m.role === 'tool').at(-1);
  return JSON.parse(tool?.role === 'tool' ? tool.content : 'null') as ToolResult;
};

describe('failure classification', () => {
  it('transient: timeouts, dropped or refused connections, DNS try-again, 429/502/503/504', () => {
    const transient = [
      new RequestTimeoutError('http://x', 10),
      new HttpStatusError('GET', 'http://x', 429, ''),
      new HttpStatusError('GET', 'http://x', 502, ''),
      new HttpStatusError('POST', 'http://x', 503, ''),
      new HttpStatusError('GET', 'http://x', 504, ''),
      Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
      Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }),
      new Error('fetch failed', { cause: Object.assign(new Error('dns'), { code: 'EAI_AGAIN' }) }),
      Object.assign(new Error('upstream'), { status: 503 }),
      new ToolFailure('busy', 'try later', { transient: true }),
    ];
    for (const err of transient) expect(classifyFailure(err), String(err)).toMatchObject({ transient: true });
  });

  it('permanent: other 4xx and 5xx, validation, permission, business errors, plain throws', () => {
    const permanent = [
      new HttpStatusError('GET', 'http://x', 400, ''),
      new HttpStatusError('GET', 'http://x', 403, ''),
      new HttpStatusError('GET', 'http://x', 404, ''),
      new HttpStatusError('GET', 'http://x', 500, ''),
      new ToolError('url_not_allowed', 'no'),
      Object.assign(new Error('not found'), { code: 'ENOTFOUND' }),
      Object.assign(new Error('forbidden'), { statusCode: 401 }),
      new Error('customer is on a frozen plan'),
      'a string',
    ];
    for (const err of permanent) expect(classifyFailure(err), String(err)).toEqual({ transient: false });
  });

  it("carries the server's Retry-After", () => {
    expect(classifyFailure(new HttpStatusError('GET', 'http://x', 429, '', { retryAfterMs: 7_000 }))).toEqual(
      {
        transient: true,
        retryAfterMs: 7_000,
      },
    );
  });
});

describe('retry delays', () => {
  const policy: RetryPolicy = { attempts: 6, initialDelayMs: 100, maxDelayMs: 1_000 };
  it('full jitter under an exponential ceiling, capped at maxDelayMs', () => {
    expect([1, 2, 3, 4, 5].map((n) => retryDelayMs(n, policy, () => 0.999999))).toEqual([
      99, 199, 399, 799, 999,
    ]);
    expect([1, 2, 3].map((n) => retryDelayMs(n, policy, () => 0))).toEqual([0, 0, 0]);
  });
  it('Retry-After replaces the jitter, capped at maxDelayMs', () => {
    expect(retryDelayMs(1, policy, () => 0, 300)).toBe(300);
    expect(retryDelayMs(1, policy, () => 0, 60_000)).toBe(1_000);
  });
});

describe('read tools retry transient failures', () => {
  it('fails twice with 503, then answers: 3 attempts, one result listing each error and wait', async () => {
    const { tool, keys } = flaky('status', 'read', 2);
    const w = retryWorld(tool, [{ calls: [call('status')] }, { text: 'It answered on the third try.' }]);
    const out = await step(newRun(), w.d);
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
    // random 0.5: half of 250, then half of 500.
    expect(w.sleeps).toEqual([125, 250]);
    const results = out.state.messages.filter((m) => m.role === 'tool');
    expect(results).toHaveLength(1);
    expect(lastResult(out.state)).toEqual({
      ok: true,
      data: { answered: true },
      attempts: [
        { attempt: 1, code: 'http_status', message: expect.stringContaining('answered 503'), delayMs: 125 },
        { attempt: 2, code: 'http_status', message: expect.stringContaining('answered 503'), delayMs: 250 },
      ],
    });
    expect(w.events.filter((e) => e.type === 'tool_retried')).toEqual([
      expect.objectContaining({
        toolCallId: expect.any(String),
        attempt: 1,
        delayMs: 125,
        code: 'http_status',
      }),
      expect.objectContaining({ attempt: 2, delayMs: 250 }),
    ]);
    expect(out.state.brakes.consecutiveToolErrors).toBe(0);
  });

  it('gives up after its attempts and says so; the failure stays transient', async () => {
    const { tool, keys } = flaky('status', 'read', 10, undefined, {
      retry: { attempts: 2, initialDelayMs: 10, maxDelayMs: 10 },
    });
    const w = retryWorld(tool, [{ calls: [call('status')] }]);
    const out = await step(newRun(), w.d);
    expect(keys).toHaveLength(2);
    const result = lastResult(out.state);
    expect(result).toMatchObject({
      ok: false,
      error: { code: 'http_status', transient: true, message: expect.stringContaining('attempt 2') },
      attempts: [{ attempt: 1, delayMs: 5 }],
    });
  });

  it('a transient reply worth reading (a health check saying 503 degraded) is retried, then is the answer', async () => {
    const degraded = () =>
      new HttpStatusError('GET', 'http://svc/health', 503, 'degraded', { answer: 'HTTP 503: degraded' });
    const { tool, keys } = flaky('health', 'read', 10, degraded);
    const w = retryWorld(tool, [{ calls: [call('health')] }]);
    const out = await step(newRun(), w.d);
    expect(keys).toHaveLength(3);
    expect(lastResult(out.state)).toEqual({
      ok: true,
      data: 'HTTP 503: degraded',
      attempts: [expect.objectContaining({ attempt: 1 }), expect.objectContaining({ attempt: 2 })],
    });
    expect(out.state.brakes.consecutiveToolErrors).toBe(0);
  });

  it('never retries a permanent failure', async () => {
    const { tool, keys } = flaky('status', 'read', 10, () => new HttpStatusError('GET', 'http://x', 404, ''));
    const w = retryWorld(tool, [{ calls: [call('status')] }]);
    const out = await step(newRun(), w.d);
    expect(keys).toHaveLength(1);
    expect(w.sleeps).toEqual([]);
    expect(lastResult(out.state)).toEqual({
      ok: false,
      error: { code: 'http_status', message: expect.stringContaining('404') },
    });
  });

  it('honours Retry-After (capped) and stops retrying when the next wait would pass the deadline', async () => {
    const { tool, keys } = flaky(
      'status',
      'read',
      10,
      () => new HttpStatusError('GET', 'http://x', 429, '', { retryAfterMs: 4_000 }),
      {
        retry: { attempts: 5, initialDelayMs: 100, maxDelayMs: 3_000 },
      },
    );
    const w = retryWorld(tool, [{ calls: [call('status')] }]);
    const out = await step(newRun({ deadlineMs: 7_000 }), w.d);
    // 3 s (capped), 3 s, then 1 s is left: no room for a third wait.
    expect(w.sleeps).toEqual([3_000, 3_000]);
    expect(keys).toHaveLength(3);
    expect(lastResult(out.state)).toMatchObject({
      ok: false,
      error: { transient: true, message: expect.stringContaining('no time left for another attempt') },
    });
  });

  it('uses the default policy for read tools that declare none', () => {
    expect(DEFAULT_RETRY).toEqual({ attempts: 3, initialDelayMs: 250, maxDelayMs: 5_000 });
  });
});

/** Runs a turn with one gated call and approves it; returns the outcome after the decision. */
async function approveOne(tool: AnyTool, script: Parameters<typeof scriptedModel>[0]) {
  const w = retryWorld(tool, script);
  const paused = await step(newRun(), w.d);
  if (paused.type !== 'interruption') throw new Error(`expected a pause, got ${paused.type}`);
  const g = paused.gated[0]!;
  const decided = await applyDecisions(
    paused.state,
    [{ toolCallId: g.toolCallId, kind: 'approved', argsHash: g.argsHash, by: 'UMGR' }],
    w.d,
  );
  return { ...w, decided };
}

describe('approved write and notify calls', () => {
  it('a non-idempotent write that fails with 503 is not repeated, and says why', async () => {
    const { tool, keys } = flaky(
      'deploy',
      'write',
      1,
      () => new HttpStatusError('POST', 'http://x', 503, 'busy'),
    );
    const { decided, sleeps, events } = await approveOne(tool, [
      { calls: [call('deploy')] },
      { text: 'done' },
    ]);
    expect(keys).toHaveLength(1);
    expect(sleeps).toEqual([]);
    expect(events.some((e: EngineEvent) => e.type === 'tool_retried')).toBe(false);
    expect(lastResult(decided.state)).toEqual({
      ok: false,
      error: {
        code: 'http_status',
        transient: true,
        message: expect.stringMatching(/answered 503.*not retried because it may not be safe to repeat$/),
      },
    });
    expect(decided.state.actions.map((a) => a.outcome)).toEqual(['failed']);
  });

  it('a write that times out is not repeated either', async () => {
    const { tool, keys } = flaky('deploy', 'write', 1, () => new RequestTimeoutError('http://x', 10));
    const { decided } = await approveOne(tool, [{ calls: [call('deploy')] }, { text: 'done' }]);
    expect(keys).toHaveLength(1);
    expect(lastResult(decided.state)).toMatchObject({
      ok: false,
      error: { code: 'request_timeout', transient: true, message: expect.stringContaining('not retried') },
    });
  });

  it('an idempotent notify is retried with the same idempotency key', async () => {
    const { tool, keys } = flaky('page', 'notify', 2, undefined, { idempotent: true });
    const { decided, sleeps } = await approveOne(tool, [{ calls: [call('page')] }, { text: 'paged' }]);
    expect(keys).toHaveLength(3);
    expect(new Set(keys)).toEqual(new Set([keys[0]]));
    expect(sleeps).toHaveLength(2);
    expect(lastResult(decided.state)).toMatchObject({ ok: true, attempts: [{ attempt: 1 }, { attempt: 2 }] });
    expect(decided.state.actions.map((a) => a.outcome)).toEqual(['succeeded']);
  });
});
