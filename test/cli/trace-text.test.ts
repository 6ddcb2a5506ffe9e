import { describe, expect, it } from 'vitest';
import { type TraceReport, traceText } from '../../src/cli/trace-text.js';

const T0 = Date.UTC(2026, 0, 2, 3, 4, 5);

/** A run with no steps, changed by `run` (and the rest of the report by `rest`). */
function report(run: Partial<TraceReport['run']> = {}, rest: Partial<TraceReport> = {}): TraceReport {
  return {
    run: {
      runId: 'run-1',
      status: 'running',
      stopReason: null,
      stopMessage: null,
      requester: 'U0ALICE',
      slack: { teamId: 'T0', channelId: 'C0', threadTs: '1.2' },
      question: 'Is payments up?',
      step: 0,
      usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.5, activeMs: 1_500, activeSince: null },
      createdAt: T0,
      updatedAt: T0 + 1_000,
      finishedAt: null,
      cancelRequest: null,
      ...run,
    },
    steps: [],
    compactions: [],
    approvals: [],
    awaitingDecision: [],
    answer: null,
    feedback: [],
    ...rest,
  } as TraceReport;
}

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1);

describe('traceText', () => {
  it('opens with the run, its usage, a cancel request, a sub-agent link and extensions', () => {
    const text = traceText(
      report({
        usage: {
          inputTokens: 10,
          cachedInputTokens: 4,
          outputTokens: 5,
          costUsd: 0.5,
          activeMs: 0,
          activeSince: null,
        },
        stopReason: 'cancelled',
        stopMessage: 'Cancelled by U0BOB.',
        status: 'cancelled',
        finishedAt: T0 + 2_000,
        cancelRequest: { by: 'U0BOB', at: T0 + 1_500 },
        agent: { name: 'db', depth: 1, parentRunId: 'run-0', parentToolCallId: 'call_9', lineage: ['db'] },
        extensions: [{ round: 1, reason: 'max_steps', added: { steps: 5 }, by: 'U0BOB', at: T0 }],
      }),
      100,
    );
    const lines = text.split('\n');
    expect(lines[0]).toBe('Run run-1: cancelled (cancelled)');
    expect(lines[2]).toContain(', finished 2026-01-02 03:04:07Z');
    expect(lines[3]).toContain('10 input (4 cached) + 5 output tokens, $0.5000');
    expect(lines[4]).toBe('  cancel requested by U0BOB at 2026-01-02 03:04:06Z');
    expect(lines[5]).toBe('  sub-agent db (depth 1) answering call call_9 of run run-0');
    expect(lines[6]).toMatch(/^ {2}budget extended \(max_steps\) by U0BOB at 2026-01-02 03:04:05Z: /);
    expect(lines.slice(7, 11)).toEqual(['', 'Question: Is payments up?', '', 'No model calls yet.']);
    expect(lastLine(text)).toBe('Stopped: cancelled: Cancelled by U0BOB.');
  });

  it('ends with why the run stopped, or what it waits for, and nothing after a completed run', () => {
    expect(lastLine(traceText(report({ stopReason: 'max_steps', stopMessage: null }), 100))).toBe(
      'Stopped: max_steps',
    );
    expect(lastLine(traceText(report(), 100))).toBe('Not finished yet.');
    expect(lastLine(traceText(report({ status: 'awaiting_approval' }), 100))).toBe('Waiting for approval.');
    const asking = report({
      status: 'awaiting_approval',
      budgetAsk: { round: 1, reason: 'max_steps', message: 'Out of steps.', offer: { steps: 10 }, at: T0 },
    });
    expect(lastLine(traceText(asking, 100))).toMatch(/^Waiting for more budget \(max_steps\): .+\?$/);
    const done = report(
      { status: 'completed', stopReason: 'completed', stopMessage: 'Completed.' },
      { answer: 'All good.\nReally.' },
    );
    expect(traceText(done, 100).endsWith('\nAnswer:\n  All good.\n  Really.\n')).toBe(true);
  });

  it('lists feedback last, comments cut to maxChars', () => {
    const text = traceText(
      report(
        {},
        {
          feedback: [
            { runId: 'run-1', userId: 'U0BOB', value: 'good', at: T0 },
            { runId: 'run-1', userId: 'U0EVE', value: 'bad', at: T0, comment: 'x'.repeat(300) },
          ],
        },
      ),
      20,
    );
    const tail = text.trimEnd().split('\n').slice(-3);
    expect(tail[0]).toBe('Feedback:');
    expect(tail[1]).toBe('  - good from U0BOB at 2026-01-02 03:04:05Z');
    expect(tail[2]?.startsWith('  - bad from U0EVE at 2026-01-02 03:04:05Z: xxxx')).toBe(true);
    expect(tail[2]?.length).toBeLessThan(120);
    expect(text.trimEnd().split('\n').at(-5)).toBe('Not finished yet.');
  });
});
