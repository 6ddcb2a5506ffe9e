import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { chunkLines, compactionNotes, MAX_SUMMARY_CALLS, planCut } from '../../src/loop/compaction.js';
import {
  compactionThreshold,
  modelView,
  nextTokenRatio,
  questionIndex,
  summaryText,
} from '../../src/loop/context.js';
import type { ContextLimits } from '../../src/loop/context-window.js';
import { applyDecisions } from '../../src/loop/decisions.js';
import { defineTool } from '../../src/loop/define-tool.js';
import { ModelError } from '../../src/loop/errors.js';
import { requestTokens } from '../../src/loop/estimate.js';
import type { Message } from '../../src/loop/messages.js';
import { runUntilPause } from '../../src/loop/run.js';
import type { RunState } from '../../src/loop/run-state.js';
import { createRun } from '../../src/loop/state.js';
import { step } from '../../src/loop/step.js';
import type { AnyTool } from '../../src/loop/tool-contract.js';
import { toolSchemas } from '../../src/loop/tool-schemas.js';
import { assertWellFormed, call, deps, newRun, type ScriptStep, testTools } from '../support/engine.js';
import { contextLimits } from '../support/memory-results.js';
import { isSummaryRequest, windowModel } from '../support/window-model.js';

/** A read tool whose result is a ~500-token report that names its row. */
function reportTools(): ReadonlyMap<string, AnyTool> {
  const { tools } = testTools();
  const report = defineTool({
    name: 'report',
    description: 'A status report of one row',
    effect: 'read',
    parameters: z.object({ row: z.number().int() }),
    async execute(args) {
      return Array.from(
        { length: 40 },
        (_, i) =>
          `row ${args.row}.${i}: service-${(args.row * 7 + i) % 97} latency ${(args.row * 13 + i * 7) % 300} ms, status ok`,
      ).join('\n');
    },
  });
  return new Map([...tools, ['report', report]]);
}

const WINDOW = 8_000;
const limits = (over: Partial<ContextLimits> = {}) =>
  contextLimits({ windowTokens: WINDOW, compactAtPercent: 70, summaryTokens: 300, ...over });

function longRun(steps: number, over: Partial<ContextLimits> = {}): RunState {
  return newRun({ maxSteps: steps + 5, maxTokens: 10_000_000, maxCostUsd: 1_000, context: limits(over) });
}

const reports = (n: number, answer = 'All rows are ok.'): ScriptStep[] => [
  ...Array.from({ length: n }, (_, i): ScriptStep => ({ calls: [call('report', { row: i + 1 })] })),
  { text: answer },
];

describe('the model view', () => {
  it('is the whole history until a compaction, then system prompt, question, summary and the messages after the cut', () => {
    const state = newRun();
    expect(modelView(state)).toBe(state.messages);
    const messages: Message[] = [
      ...state.messages,
      { role: 'assistant', content: null, toolCalls: [{ id: 'a', name: 'noop', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'a', name: 'noop', content: '{"ok":true,"data":"ok"}' },
      { role: 'assistant', content: 'next', toolCalls: [{ id: 'b', name: 'noop', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'b', name: 'noop', content: '{"ok":true,"data":"ok"}' },
    ];
    const record = {
      upTo: 4,
      messages: 6,
      summary: 'I ran noop once.',
      notes:
        'Recorded by loopgate (its records, not my words):\nNo call that needs approval was made so far.',
      step: 2,
      at: 0,
      tokensBefore: 100,
      tokensAfter: 60,
      calls: 1,
      usage: { inputTokens: 50, outputTokens: 10 },
      costUsd: 0,
    };
    const compacted: RunState = { ...state, messages, compactions: [record] };
    const view = modelView(compacted);
    expect(view).toEqual([
      messages[0],
      { role: 'user', content: 'Is payments healthy?' },
      { role: 'assistant', content: summaryText(record) },
      messages[4],
      messages[5],
    ]);
    expect(summaryText(record)).toMatch(
      /^\[loopgate\] The earlier part of this run was compacted.*It covered 3 messages\. My summary of it:\nI ran noop once\./s,
    );
    // Loaded again (a JSON round trip, as from Redis), the run gives the model the same view.
    expect(modelView(JSON.parse(JSON.stringify(compacted)) as RunState)).toEqual(view);
  });

  it('finds the question after the thread history', () => {
    const state = newRun();
    const withHistory: RunState = {
      ...state,
      messages: [
        state.messages[0]!,
        { role: 'user', content: 'Is payments healthy?' },
        { role: 'assistant', content: 'Yes.' },
        { role: 'user', content: 'Is payments healthy?' },
        { role: 'assistant', content: null, toolCalls: [{ id: 'a', name: 'noop', arguments: '{}' }] },
        { role: 'tool', toolCallId: 'a', name: 'noop', content: '{}' },
        { role: 'user', content: 'Is payments healthy?' },
      ],
    };
    expect(questionIndex(withHistory)).toBe(3);
  });
});

describe('the threshold and the cut', () => {
  it('compacts only once a request would pass the threshold, cutting where no tool message is orphaned', async () => {
    const model = windowModel(reports(30), { windowTokens: WINDOW });
    const { deps: d, events } = deps(model, { tools: reportTools() });
    const out = await runUntilPause(longRun(30), d);
    expect(out.state.stopReason).toBe('completed');
    expect(model.problems).toEqual([]);
    expect(model.refused).toBe(0);
    const compactions = out.state.compactions ?? [];
    expect(compactions.length).toBeGreaterThanOrEqual(2);
    const threshold = compactionThreshold(limits());
    const tools = toolSchemas(d.tools);
    for (const req of model.requests) {
      expect(requestTokens(req.messages, req.tools)).toBeLessThanOrEqual(threshold);
    }
    for (const c of compactions) {
      expect(out.state.messages[c.upTo]?.role).not.toBe('tool');
      expect(c.tokensBefore).toBeGreaterThan(threshold);
      expect(c.tokensAfter).toBeLessThan(c.tokensBefore);
      expect(c.calls).toBe(1);
    }
    // Cuts move forward; the stored history lost nothing.
    expect(compactions.map((c) => c.upTo)).toEqual([...compactions.map((c) => c.upTo)].sort((a, b) => a - b));
    expect(out.state.messages).toHaveLength(2 + 30 * 2 + 1);
    assertWellFormed(out.state);
    // The request that followed a compaction: head, then the kept turns, the latest one whole.
    const lastCompacted = model.requests.at(-1)!.messages;
    expect(lastCompacted.slice(0, 2)).toEqual([
      out.state.messages[0],
      { role: 'user', content: 'Is payments healthy?' },
    ]);
    expect(lastCompacted[2]).toMatchObject({
      role: 'assistant',
      content: expect.stringContaining('Summary #'),
    });
    expect(lastCompacted.at(-1)).toEqual(out.state.messages.at(-2));
    // Each summary request carries the previous summary and fits the window.
    expect(model.summaries[1]!.messages[1]!.content).toContain(
      'Summary of the part before this one:\nSummary #1.',
    );
    for (const req of model.summaries)
      expect(requestTokens(req.messages, []) + (req.maxOutputTokens ?? 0)).toBeLessThanOrEqual(WINDOW);
    expect(events.filter((e) => e.type === 'context_compacted')).toHaveLength(compactions.length);
    expect(tools.length).toBeGreaterThan(0);
  });

  it('does not compact a run that stays under the threshold', async () => {
    const model = windowModel(reports(3), { windowTokens: WINDOW });
    const { deps: d } = deps(model, { tools: reportTools() });
    const out = await runUntilPause(longRun(3), d);
    expect(out.state.stopReason).toBe('completed');
    expect(out.state.compactions).toBeUndefined();
    expect(model.summaries).toHaveLength(0);
  });

  it('keeps the latest turns that fit half the threshold, and never cuts before the question', () => {
    const state = longRun(0);
    const tools = toolSchemas(reportTools());
    expect(planCut(state, tools, limits())).toEqual({ from: 1, upTo: 2 });
    const grown: RunState = { ...state, messages: [...state.messages] };
    for (let i = 0; i < 20; i++) {
      grown.messages.push(
        {
          role: 'assistant',
          content: null,
          toolCalls: [{ id: `c${i}`, name: 'report', arguments: `{"row":${i}}` }],
        },
        { role: 'tool', toolCallId: `c${i}`, name: 'report', content: 'row '.repeat(300) },
      );
    }
    const cut = planCut(grown, tools, limits())!;
    expect(grown.messages[cut.upTo]!.role).toBe('assistant');
    expect(cut.upTo).toBeGreaterThan(2);
    expect(cut.upTo).toBeLessThan(grown.messages.length);
  });
});

describe('usage correction', () => {
  it('keeps the ratio of the reported input to the estimate, within bounds', () => {
    expect(nextTokenRatio(1_300, 1_000)).toBe(1.3);
    expect(nextTokenRatio(100, 1_000)).toBe(0.75);
    expect(nextTokenRatio(100_000, 1_000)).toBe(4);
    expect(nextTokenRatio(undefined, 1_000)).toBeNull();
    expect(nextTokenRatio(0, 1_000)).toBeNull();
  });

  it('compacts earlier for a server that counts more tokens than the estimate, and none is refused', async () => {
    const counted = windowModel(reports(30), { windowTokens: WINDOW, tokenFactor: 1.6 });
    const a = deps(counted, { tools: reportTools() });
    const out = await runUntilPause(longRun(30), a.deps);
    expect(out.state.stopReason).toBe('completed');
    expect(counted.refused).toBe(0);
    expect(out.state.context?.tokenRatio).toBeGreaterThan(1.5);
    const exact = windowModel(reports(30), { windowTokens: WINDOW });
    const b = deps(exact, { tools: reportTools() });
    const plain = await runUntilPause(longRun(30), b.deps);
    expect(out.state.compactions!.length).toBeGreaterThan(plain.state.compactions!.length);
    // Every agent request the server counted fits its window with the reply bound.
    for (const req of counted.requests) {
      expect(
        Math.ceil(requestTokens(req.messages, req.tools) * 1.6) + (req.maxOutputTokens ?? 0),
      ).toBeLessThanOrEqual(WINDOW);
    }
  });
});

describe('budgets and overflow', () => {
  it('charges summary calls to the token and cost budgets but not to the steps', async () => {
    const model = windowModel(reports(20), { windowTokens: WINDOW });
    const { deps: d } = deps(model, { tools: reportTools() });
    const price = { inputPerMTok: 1, outputPerMTok: 4 };
    const out = await runUntilPause(
      newRun({
        maxSteps: 25,
        maxTokens: 10_000_000,
        maxCostUsd: 1_000,
        defaultPrice: price,
        context: limits(),
      }),
      d,
    );
    const compactions = out.state.compactions!;
    expect(out.state.step).toBe(21);
    const agentInput = model.requests.reduce((n, r) => n + requestTokens(r.messages, r.tools), 0);
    const summaryInput = compactions.reduce((n, c) => n + c.usage.inputTokens, 0);
    expect(summaryInput).toBeGreaterThan(0);
    expect(out.state.usage.inputTokens).toBe(agentInput + summaryInput);
    const summaryCost = compactions.reduce((n, c) => n + c.costUsd, 0);
    expect(summaryCost).toBeCloseTo(
      compactions.reduce((n, c) => n + c.usage.inputTokens + 4 * c.usage.outputTokens, 0) / 1e6,
      9,
    );
    const { inputTokens, outputTokens } = out.state.usage;
    expect(out.state.usage.costUsd).toBeCloseTo((inputTokens + 4 * outputTokens) / 1e6, 9);
  });

  it('stops with cost_budget when the budget cannot pay for the summary call', async () => {
    const price = { inputPerMTok: 1_000, outputPerMTok: 1_000 };
    const probe = windowModel(reports(30), { windowTokens: WINDOW });
    const first = await runUntilPause(longRun(30), deps(probe, { tools: reportTools() }).deps);
    const step = first.state.compactions![0]!.step;
    const tokens = probe.requests
      .slice(0, step)
      .reduce((n, r) => n + requestTokens(r.messages, r.tools) + 5, 0);
    const model = windowModel(reports(30), { windowTokens: WINDOW });
    const out = await runUntilPause(
      newRun({
        maxSteps: 40,
        maxTokens: 10_000_000,
        maxCostUsd: ((tokens + 300) * 1_000) / 1e6,
        defaultPrice: price,
        context: limits(),
      }),
      deps(model, { tools: reportTools() }).deps,
    );
    expect(out.state.stopReason).toBe('cost_budget');
    // Every step before the compaction was made; the summary call was not.
    expect(out.state.step).toBe(step);
    expect(model.summaries).toHaveLength(0);
    expect(out.state.usage.costUsd).toBeLessThanOrEqual(((tokens + 300) * 1_000) / 1e6);
  });

  it('stops with token_budget when the budget cannot pay for the summary call', async () => {
    const model = windowModel(reports(30), { windowTokens: WINDOW });
    const { deps: d } = deps(model, { tools: reportTools() });
    const first = await runUntilPause(longRun(30), d);
    const needed = first.state.compactions![0]!;
    // Just enough for the agent calls before the first compaction, not for its summary.
    const budget = model.requests
      .slice(0, needed.step)
      .reduce((n, r) => n + requestTokens(r.messages, r.tools) + 5, 0);
    const again = windowModel(reports(30), { windowTokens: WINDOW });
    const other = deps(again, { tools: reportTools() });
    const out = await runUntilPause(
      newRun({ maxSteps: 40, maxTokens: budget + 200, maxCostUsd: 1_000, context: limits() }),
      other.deps,
    );
    expect(out.state.stopReason).toBe('token_budget');
    expect(out.state.step).toBe(needed.step);
    expect(again.summaries.length).toBe(0);
    expect(out.state.usage.inputTokens + out.state.usage.outputTokens).toBeLessThanOrEqual(budget + 200);
  });

  it("stops with deadline when the run's working time runs out during a summary call", async () => {
    const inner = windowModel(reports(30), { windowTokens: WINDOW });
    const hanging = {
      ...inner,
      complete(req: Parameters<typeof inner.complete>[0]) {
        if (!isSummaryRequest(req)) return inner.complete(req);
        // Never answers; gives up only when the engine aborts the request at the run's deadline.
        return new Promise<never>((_, reject) =>
          req.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
        );
      },
    };
    const { deps: d } = deps(hanging, { tools: reportTools() });
    const started = Date.now();
    const out = await runUntilPause(
      newRun({ maxSteps: 40, maxTokens: 10_000_000, maxCostUsd: 1_000, deadlineMs: 300, context: limits() }),
      d,
    );
    expect(out.state.stopReason).toBe('deadline');
    expect(out.state.stopMessage).toBe(
      'Stopped: the run ran out of working time while summarising its earlier part.',
    );
    expect(out.state.compactions).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('summarises even the latest turn when only that brings the request within the window', async () => {
    const huge = defineTool({
      name: 'huge',
      description: 'A result longer than the window',
      effect: 'read',
      parameters: z.object({}),
      async execute() {
        return Array.from({ length: 2_000 }, (_, i) => `entry ${i} value ${i * 31}`).join('\n');
      },
    });
    const model = windowModel([{ calls: [call('huge')] }, { text: 'Entries checked.' }], {
      windowTokens: WINDOW,
    });
    const { deps: d } = deps(model, { tools: new Map([['huge', huge]]) });
    const out = await runUntilPause(
      newRun({ maxObservationChars: 200_000, maxTokens: 10_000_000, maxCostUsd: 100, context: limits() }),
      d,
    );
    expect(out.state.stopReason).toBe('completed');
    expect(out.state.compactions?.[0]?.upTo).toBe(out.state.messages.length - 1);
    expect(model.summaries).toHaveLength(1);
    expect(model.refused).toBe(0);
  });

  it('stops with context_overflow, for the person, when the question alone does not fit', async () => {
    const model = windowModel([{ text: 'never' }], { windowTokens: WINDOW });
    const { deps: d } = deps(model);
    const question = Array.from({ length: 3_000 }, (_, i) => `item ${i} needs checking`).join('; ');
    const state = createRun({
      runId: 'run1',
      requester: { userId: 'UREQ' },
      systemPrompt: 'You are loopgate.',
      question,
      limits: { maxTokens: 10_000_000, maxCostUsd: 100, context: limits() },
      now: 1_700_000_000_000,
    });
    const out = await runUntilPause(state, d);
    expect(out.state.stopReason).toBe('context_overflow');
    expect(out.state.status).toBe('stopped');
    expect(out.state.stopMessage).toMatch(/context window of 8000 tokens/);
    expect(model.requests).toHaveLength(0);
    expect(model.refused).toBe(0);
  });
});

describe('a server that refuses a request as too long', () => {
  it('compacts and asks again; refused twice in a row, the run stops with context_overflow', async () => {
    let refusals = 1;
    const base = windowModel(reports(12), { windowTokens: 1_000_000 });
    const refusing = {
      ...base,
      async complete(req: Parameters<typeof base.complete>[0]) {
        if (!isSummaryRequest(req) && base.requests.length === 4 && refusals-- > 0) {
          throw new ModelError('too long', { status: 400, retryable: false, contextExceeded: true });
        }
        return base.complete(req);
      },
    };
    const { deps: d } = deps(refusing, { tools: reportTools() });
    const out = await runUntilPause(longRun(12), d);
    expect(out.state.stopReason).toBe('completed');
    // The refused call counts as a step (the fifth); a compaction came right after it, long before
    // the threshold would have asked for one.
    expect(out.state.compactions?.[0]?.step).toBe(5);
    expect(base.refused).toBe(0);
    expect(out.state.context).toEqual({ tokenRatio: expect.any(Number) });

    const always = {
      ...base,
      async complete(req: Parameters<typeof base.complete>[0]) {
        if (isSummaryRequest(req)) return base.complete(req);
        throw new ModelError('too long', { status: 400, retryable: false, contextExceeded: true });
      },
    };
    const stopped = await runUntilPause(longRun(12), deps(always, { tools: reportTools() }).deps);
    expect(stopped.state.stopReason).toBe('context_overflow');
    expect(stopped.state.stopMessage).toMatch(/refused the conversation as longer than its context window/);
  });
});

describe("loopgate's notes and the chunks", () => {
  it('list every gated action with its outcome and the evidence of the summarised part', async () => {
    const model = windowModel(
      [
        { calls: [call('lookup', { service: 'payments' })] },
        { calls: [call('restart', { service: 'payments' })] },
        { text: 'done' },
      ],
      { windowTokens: WINDOW },
    );
    const { deps: d } = deps(model);
    let state = (await runUntilPause(longRun(3), d)).state;
    const g = state.turn!.pending[0]!;
    state = (
      await applyDecisions(
        state,
        [{ toolCallId: g.toolCallId, kind: 'rejected', by: 'UMGR', reason: 'not now' }],
        d,
      )
    ).state;
    const notes = compactionNotes(state, state.messages.length, 300);
    expect(notes).toContain(
      `- restart (call ${g.toolCallId}): rejected, decided by UMGR (not now): rejected: Not executed`,
    );
    expect(notes).toMatch(
      /Evidence from the summarised part:\n- lookup \(call lg1_0_call_0\): \{ "service": "payments", "status": "ok" \}/,
    );
  });

  it('split a long part into chunks within the budget, leaving out the oldest past the most calls', () => {
    const lines = Array.from({ length: 300 }, (_, i) => `[me] line ${i} ${'word '.repeat(40)}`);
    const chunks = chunkLines(lines, 1_000, 1);
    expect(chunks.length).toBe(MAX_SUMMARY_CALLS);
    expect(chunks[0]).toMatch(
      /^\(The \d+ oldest messages of this part were left out: too long to summarise\.\)/,
    );
    expect(chunks.at(-1)).toContain('line 299 ');
    const few = chunkLines(lines.slice(0, 10), 1_000, 1);
    expect(few.join('\n')).toBe(lines.slice(0, 10).join('\n'));
  });

  it('summarise a part too long for one call in several, each within the window', async () => {
    const model = windowModel(reports(40), { windowTokens: WINDOW });
    const { deps: d } = deps(model, { tools: reportTools() });
    // A small threshold with a large tail kept leaves long parts to summarise in one go.
    const out = await runUntilPause(longRun(40, { compactAtPercent: 90 }), d);
    expect(out.state.stopReason).toBe('completed');
    for (const req of model.summaries)
      expect(requestTokens(req.messages, []) + (req.maxOutputTokens ?? 0)).toBeLessThanOrEqual(WINDOW);
    expect(model.refused).toBe(0);
  });
});

describe('resuming', () => {
  it('gives the same view after a JSON round trip at every step', async () => {
    const model = windowModel(reports(25), { windowTokens: WINDOW });
    const { deps: d } = deps(model, { tools: reportTools() });
    let state = longRun(25);
    for (let i = 0; i < 60 && !state.stopReason; i++) {
      state = JSON.parse(JSON.stringify((await step(state, d)).state)) as RunState;
    }
    expect(state.stopReason).toBe('completed');
    expect(state.compactions!.length).toBeGreaterThan(0);
    expect(model.problems).toEqual([]);
  });
});

describe('a cancel during a compaction', () => {
  it('abandons the summary, keeps the run as it was (no compaction recorded) and stops at the boundary', async () => {
    const inner = windowModel(reports(30), { windowTokens: WINDOW });
    const cancel = new AbortController();
    let summariesAsked = 0;
    const model = {
      ...inner,
      complete: (req: Parameters<typeof inner.complete>[0]) => {
        if (!isSummaryRequest(req)) return inner.complete(req);
        summariesAsked++;
        // The stop button is clicked while the summary is being written.
        setTimeout(() => cancel.abort(), 5);
        return new Promise<never>((_, reject) =>
          req.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
        );
      },
    };
    const { deps: d } = deps(model, { tools: reportTools(), cancelSignal: cancel.signal });
    const out = await runUntilPause(longRun(30), d);
    expect(out.type).toBe('cancel_requested');
    expect(summariesAsked).toBe(1);
    expect(out.state.status).toBe('running');
    expect(out.state.compactions).toBeUndefined();
    const asked = inner.requests.length;
    expect(out.state.step).toBe(asked);
    assertWellFormed(out.state);
  });
});
