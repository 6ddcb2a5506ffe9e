import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { attentionRows, paintFor } from '../../src/cli/attention.js';
import type { ApprovalRecord, RunRow } from '../../src/store/index.js';

const NOW = 1_767_000_000_000;
const STATUSES = ['running', 'awaiting_approval', 'completed', 'failed', 'stopped', 'cancelled'] as const;

const row = (runId: string, status: RunRow['status'], createdAt: number): RunRow => ({
  runId,
  status,
  stopReason: null,
  step: 1,
  requester: 'U1',
  teamId: 'T1',
  channelId: 'C1',
  threadTs: '1.1',
  question: 'q',
  createdAt,
  updatedAt: createdAt + 1_000,
  costUsd: 0,
  waitingOnAgents: [],
});

const pendingSince = (createdAt: number, users: string[]) =>
  ({ createdAt, approvers: { users, groups: [] } }) as unknown as ApprovalRecord;

describe('attentionRows', () => {
  it('paused runs first (longest wait first), then working runs (oldest first), then failed or stopped, then the rest (newest first)', () => {
    const rows = [
      row('done-new', 'completed', NOW - 1_000),
      row('done-old', 'completed', NOW - 90_000),
      row('failed', 'failed', NOW - 50_000),
      row('run-young', 'running', NOW - 2_000),
      row('run-old', 'running', NOW - 80_000),
      row('paused-short', 'awaiting_approval', NOW - 100_000),
      { ...row('paused-long', 'awaiting_approval', NOW - 10_000), waitingOnAgents: ['triage'] },
    ];
    const pending = new Map([
      ['paused-short', [pendingSince(NOW - 5_000, ['U2'])]],
      ['paused-long', [pendingSince(NOW - 9_000, ['U3']), pendingSince(NOW - 6_000, ['U3', 'U4'])]],
    ]);
    const sorted = attentionRows(rows, pending, NOW);
    expect(sorted.map((r) => r.runId)).toEqual([
      'paused-long',
      'paused-short',
      'run-old',
      'run-young',
      'failed',
      'done-new',
      'done-old',
    ]);
    expect(sorted[0]).toMatchObject({ waitingOn: ['U3', 'U4', 'agent:triage'], waitingMs: 9_000 });
    expect(sorted.find((r) => r.runId === 'run-old')).toMatchObject({ durationMs: 80_000, waitingMs: null });
    expect(sorted.find((r) => r.runId === 'done-old')).toMatchObject({ durationMs: 1_000, ageMs: 90_000 });
  });

  it('property: a permutation of its input, every open run before every ended one', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ status: fc.constantFrom(...STATUSES), age: fc.integer({ min: 0, max: 1e7 }) }), {
          maxLength: 30,
        }),
        (specs) => {
          const rows = specs.map((s, i) => row(`r${i}`, s.status, NOW - s.age));
          const sorted = attentionRows(rows, new Map(), NOW);
          expect(sorted.map((r) => r.runId).sort()).toEqual(rows.map((r) => r.runId).sort());
          const open = sorted.map((r) => r.status === 'running' || r.status === 'awaiting_approval');
          expect(open.indexOf(false) === -1 || open.lastIndexOf(true) < open.indexOf(false)).toBe(true);
        },
      ),
    );
  });
});

describe('paintFor', () => {
  it('colours only on a terminal, and never with NO_COLOR', () => {
    expect(paintFor({ isTTY: true }, {}).status('failed', 'failed')).toBe('\u001b[31mfailed\u001b[0m');
    expect(paintFor({ isTTY: true }, {}).status('awaiting_approval', 'x')).toBe('\u001b[33mx\u001b[0m');
    expect(paintFor({ isTTY: true }, { NO_COLOR: '1' }).status('failed', 'failed')).toBe('failed');
    expect(paintFor({}, {}).status('failed', 'failed')).toBe('failed');
    expect(paintFor({ isTTY: false }, {}).status('failed', 'x')).toBe('x');
  });
});
