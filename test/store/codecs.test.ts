import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/loop/messages.js';
import { renderResult, summarise } from '../../src/loop/observation.js';
import type { Evidence } from '../../src/loop/run-state.js';
import { approvalIdFor } from '../../src/store/ids.js';
import type { TraceEntry } from '../../src/store/records.js';
import { decodeEvidence, encodeEvidence } from '../../src/store/runs/evidence-codec.js';
import { changingJson, fixedJson, headerFromHash, pauseField } from '../../src/store/runs/header-codec.js';
import { decodeTrace, encodeTraceEntry, type RecordedTraceEntry } from '../../src/store/runs/trace-codec.js';
import { realisticState, T0 } from './run-state-fixture.js';

const roundTrip = (entries: TraceEntry[]) =>
  decodeTrace(
    entries.map((e) => JSON.parse(encodeTraceEntry(e, T0 - 100))),
    T0 - 100,
  );

describe('trace codec', () => {
  const recorded: RecordedTraceEntry[] = [
    { type: 'model_replied', at: T0, step: 3, durationMs: 812 },
    { type: 'tool_started', at: T0 + 1, toolCallId: 'call_3', effect: 'write' },
    { type: 'tool_finished', at: T0 + 2, toolCallId: 'call_1', effect: 'read', ok: true, durationMs: 40 },
    {
      type: 'tool_finished',
      at: T0 + 3,
      toolCallId: 'call_2',
      effect: 'read',
      ok: false,
      durationMs: 30_000,
      code: 'timeout',
    },
    { type: 'approval_needed', at: T0 + 4, toolCallIds: ['call_3', 'call_4'] },
    { type: 'decision_applied', at: T0 + 5, toolCallId: 'call_3', decision: 'approved', by: 'U0M' },
    { type: 'decision_applied', at: T0 + 6, toolCallId: 'call_4', decision: 'expired' },
    { type: 'answer_rejected', at: T0 + 7, problems: ['empty answer'] },
    { type: 'finished', at: T0 + 8, status: 'completed', stopReason: 'completed' },
  ];

  it('stores every kind the worker records as a row and reads it back unchanged', () => {
    for (const entry of recorded) expect(JSON.parse(encodeTraceEntry(entry, T0))).toBeInstanceOf(Array);
    expect(encodeTraceEntry(recorded[0]!, T0 - 100)).toBe('["m",100,3,812]');
    expect(roundTrip(recorded)).toStrictEqual(recorded);
  });

  it('stores any other entry as its object: other kinds, extra fields, other value types', () => {
    const others: TraceEntry[] = [
      { type: 'step_started', at: T0, step: 1 },
      { type: 'model_replied', at: T0, step: 1, durationMs: 5, runId: 'r1', usage: { inputTokens: 1 } },
      { type: 'model_replied', at: T0, step: 'two', durationMs: 5 },
      { type: 'x', at: T0 },
    ];
    for (const entry of others) expect(encodeTraceEntry(entry, T0).startsWith('{')).toBe(true);
    expect(roundTrip(others)).toStrictEqual(others);
  });

  it('refuses a damaged row', () => {
    expect(() => decodeTrace([['m', 5, 'three', 5]], T0)).toThrow();
    expect(() => decodeTrace([['m', '5', 3, 5]], T0)).toThrow(/without its time/);
    expect(() => decodeTrace([['?', 5]], T0)).toThrow(/unknown kind/);
    expect(() => decodeTrace([['e', 5, 'completed', 'completed', 'extra']], T0)).toThrow();
  });
});

describe('evidence codec', () => {
  const result = { ok: true as const, data: { status: 'degraded', errors: [0.27, 0.31] } };
  const messages: Message[] = [
    { role: 'user', content: 'how is payments?' },
    {
      role: 'assistant',
      content: null,
      toolCalls: [{ id: 'call_1', name: 'http_get', arguments: '{}' }],
    },
    { role: 'tool', toolCallId: 'call_1', name: 'http_get', content: renderResult(result) },
  ];
  const derivable: Evidence = {
    toolCallId: 'call_1',
    tool: 'http_get',
    kind: 'result',
    ok: true,
    summary: summarise(result),
    at: T0 + 1500,
  };
  const read = (stored: string) => decodeEvidence([JSON.parse(stored)], messages, T0);

  it('keeps a result its tool message gives back whole as [message index, at - createdAt]', () => {
    const stored = encodeEvidence(derivable, messages, 1, T0);
    expect(stored).toBe('[2,1500]');
    expect(read(stored)).toStrictEqual([derivable]);
  });

  it('keeps any other record as a full row', () => {
    const others: Evidence[] = [
      { ...derivable, summary: 'status degraded' },
      { ...derivable, tool: 'other_tool' },
      { ...derivable, kind: 'verification' },
      { ...derivable, ok: false },
    ];
    for (const evidence of others) {
      const stored = encodeEvidence(evidence, messages, 0, T0 + 0.1);
      expect(JSON.parse(stored)).toEqual([
        evidence.toolCallId,
        evidence.tool,
        evidence.kind,
        evidence.ok,
        evidence.summary,
        evidence.at,
      ]);
      expect(decodeEvidence([JSON.parse(stored)], messages, T0 + 0.1)).toStrictEqual([evidence]);
    }
    // The tool message is looked for only among the messages stored with the evidence.
    expect(JSON.parse(encodeEvidence(derivable, messages, 3, T0))).toHaveLength(6);
  });

  it('gives back times exactly whatever the clock gives', () => {
    for (const [at, createdAt] of [
      [T0 + 0.3, T0 + 0.1],
      [0.3, 0.1],
      [1e-9, 1e21],
      [T0 - 5, T0],
    ] as const) {
      const evidence = { ...derivable, at };
      expect(
        decodeEvidence([JSON.parse(encodeEvidence(evidence, messages, 0, createdAt))], messages, createdAt),
      ).toStrictEqual([evidence]);
    }
  });

  it('refuses a record with fields Evidence does not have, and a row pointing to no result', () => {
    expect(() => encodeEvidence({ ...derivable, extra: 1 } as Evidence, messages, 0, T0)).toThrow(TypeError);
    expect(() => decodeEvidence([[1, 0]], messages, T0)).toThrow(/no result message/);
    expect(() => decodeEvidence([[9, 0]], messages, T0)).toThrow(/no result message/);
    expect(() => decodeEvidence([JSON.parse('[2,1e400]')], messages, T0)).toThrow(/no result message/);
    expect(() => decodeEvidence([{ ...derivable }], messages, T0)).toThrow(/not a row/);
  });
});

describe('header codec', () => {
  it('splits the header into a fixed and a changing part and reassembles it exactly', () => {
    const { messages: _m, evidence: _e, ...header } = realisticState('run-h');
    const fixed = JSON.parse(fixedJson(header));
    const changing = JSON.parse(changingJson(header));
    expect(Object.keys(fixed).sort()).toEqual(['limits', 'question', 'requester']);
    expect(Object.keys(changing)).not.toContain('limits');
    const hash = {
      state: fixedJson(header),
      progress: changingJson(header),
      status: header.status,
      step: String(header.step),
      stopReason: '',
      createdAt: String(header.createdAt),
      updatedAt: String(header.updatedAt),
    };
    expect(headerFromHash('run-h', hash)).toStrictEqual(header);
    expect(() => headerFromHash('run-h', { ...hash, step: '' })).toThrow();
    expect(() =>
      headerFromHash('run-h', { ...hash, progress: JSON.stringify({ ...changing, status: 'completed' }) }),
    ).toThrow();
    // Status, stop reason and stop message are stored apart; they must agree (RunState's union).
    expect(() => headerFromHash('run-h', { ...hash, status: 'completed' })).toThrow(
      /status completed with no stop reason/,
    );
    expect(() => headerFromHash('run-h', { ...hash, stopReason: 'completed' })).toThrow(
      /status awaiting_approval with stop reason completed/,
    );
    const ended = { ...hash, status: 'completed', stopReason: 'completed' };
    expect(() => headerFromHash('run-h', ended)).toThrow(/no stop message/);
    const endedProgress = JSON.stringify({ ...changing, stopMessage: 'Completed.' });
    expect(headerFromHash('run-h', { ...ended, progress: endedProgress })).toMatchObject({
      status: 'completed',
      stopReason: 'completed',
      stopMessage: 'Completed.',
    });
  });

  it('names the approvals of the pending calls in the pause field', () => {
    const state = realisticState('run-h');
    expect(pauseField(state)).toBe(approvalIdFor('run-h', 'call_3'));
    expect(pauseField({ ...state, turn: null })).toBe('');
  });
});
