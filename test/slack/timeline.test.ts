import { describe, expect, it } from 'vitest';
import { Timeline, taskTitle } from '../../src/slack/surfaces/timeline.js';

describe('timeline steps from engine events', () => {
  it('titles a call by its method and where it goes, else by the tool and its subject', () => {
    expect(taskTitle('http_get', { url: 'https://status.internal/payments?x=1' })).toBe(
      'GET status.internal/payments',
    );
    expect(taskTitle('http_request', { method: 'post', url: 'https://deploy.internal/' })).toBe(
      'POST deploy.internal',
    );
    expect(taskTitle('search_runbooks', { query: 'payments latency' })).toBe(
      'search_runbooks: payments latency',
    );
    expect(taskTitle('current_time', {})).toBe('current_time');
    expect(taskTitle('x', { query: 'q'.repeat(200) }).length).toBeLessThanOrEqual(80);
  });

  it('follows a call from in progress to complete or error, with its source, and approvals as waiting steps', () => {
    const t = new Timeline();
    const base = { runId: 'r', tool: 'http_get', effect: 'read' as const };
    const args = { url: 'https://status.internal/payments' };
    const source = [{ type: 'url', url: args.url, text: 'status.internal/payments' }];
    expect(t.updates({ ...base, type: 'tool_started', toolCallId: 'a', args })).toEqual([
      {
        type: 'task_update',
        id: 'a',
        title: 'GET status.internal/payments',
        status: 'in_progress',
        sources: source,
      },
    ]);
    expect(
      t.updates({ ...base, type: 'tool_finished', toolCallId: 'a', ok: true, durationMs: 12.4 }),
    ).toEqual([
      {
        type: 'task_update',
        id: 'a',
        title: 'GET status.internal/payments',
        status: 'complete',
        output: 'done in 12 ms',
        sources: source,
      },
    ]);
    expect(
      t.updates({
        ...base,
        type: 'tool_finished',
        toolCallId: 'b',
        ok: false,
        code: 'timeout',
        durationMs: 5,
      }),
    ).toMatchObject([{ id: 'b', title: 'http_get', status: 'error', output: 'failed: timeout' }]);
    const call = {
      toolCallId: 'c',
      tool: 'http_request',
      effect: 'write' as const,
      args: { method: 'POST', url: 'https://deploy.internal/payments' },
      argsHash: 'h',
      idempotent: false,
    };
    expect(t.updates({ type: 'approval_needed', runId: 'r', calls: [call] })).toMatchObject([
      {
        id: 'c',
        title: 'POST deploy.internal/payments',
        status: 'pending',
        details: 'Waiting for approval on the card below',
      },
    ]);
    expect(
      t.updates({ type: 'decision_applied', runId: 'r', toolCallId: 'c', decision: 'rejected', by: 'U1' }),
    ).toMatchObject([{ id: 'c', status: 'error', output: 'not run: rejected by U1' }]);
    expect(
      t.updates({ type: 'decision_applied', runId: 'r', toolCallId: 'c', decision: 'approved' }),
    ).toEqual([]);
    expect(t.updates({ type: 'step_started', runId: 'r', step: 1 })).toEqual([]);
  });
});
