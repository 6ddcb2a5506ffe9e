import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  approvalIdFor,
  isApprovalId,
  isRunId,
  keyScheme,
  nextRoundOf,
  roundOf,
  runIdForEvent,
  runIdOf,
} from '../../src/store/index.js';

/** The hash tag Redis Cluster uses: the text between the first '{' and the next '}', when not empty. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  const close = open === -1 ? -1 : key.indexOf('}', open + 1);
  return open !== -1 && close > open + 1 ? key.slice(open + 1, close) : key;
}

describe('ids', () => {
  it('derives valid, stable run ids from any Slack event id', () => {
    expect(runIdForEvent('Ev08ABCDEF')).toBe('r-Ev08ABCDEF');
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 300 }), (eventId) => {
        const runId = runIdForEvent(eventId);
        expect(isRunId(runId)).toBe(true);
        expect(runIdForEvent(eventId)).toBe(runId);
        expect(runId).not.toMatch(/[:{}]/);
      }),
    );
    expect(runIdForEvent('a:b')).not.toBe(runIdForEvent('a_b'));
  });

  it('builds approval ids that carry their run, are stable, and are safe as BullMQ job ids', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.integer({ min: 1, max: 50 }), (toolCallId, round) => {
        const id = approvalIdFor('r-Ev1', toolCallId, round);
        expect(id).toBe(approvalIdFor('r-Ev1', toolCallId, round));
        expect(isApprovalId(id)).toBe(true);
        expect(runIdOf(id)).toBe('r-Ev1');
        expect(id).not.toContain(':');
        expect(id).not.toMatch(/^\d+$/);
      }),
    );
    expect(approvalIdFor('r-Ev1', 'call_1')).not.toBe(approvalIdFor('r-Ev1', 'call_2'));
    expect(approvalIdFor('r-Ev1', 'call_1', 2)).not.toBe(approvalIdFor('r-Ev1', 'call_1'));
    expect(() => approvalIdFor('bad:run', 'call_1')).toThrow(TypeError);
  });

  it('numbers the rounds of an approval: the next round is a valid approval id of the same run and call', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/),
        fc.string({ minLength: 1 }),
        (runId, callId) => {
          const first = approvalIdFor(runId, callId);
          const second = nextRoundOf(first);
          expect(roundOf(first)).toBe(1);
          expect(second).toBe(approvalIdFor(runId, callId, 2));
          expect(nextRoundOf(second)).toBe(approvalIdFor(runId, callId, 3));
          expect(isApprovalId(second) && runIdOf(second) === runId).toBe(true);
        },
      ),
    );
  });

  it('refuses run ids that are all digits or carry key syntax', () => {
    for (const bad of ['123', 'a:b', 'a{b}', '', 'a.b', 'x'.repeat(101)]) expect(isRunId(bad)).toBe(false);
  });
});

describe('key scheme', () => {
  const keys = keyScheme('{loopgate}');

  it('puts every key of a run, its approvals and ledger in the run hash slot, without the BullMQ tag', () => {
    const run = keys.run('r-Ev1');
    const approval = approvalIdFor('r-Ev1', 'call_1');
    const all = [run.header, run.messages, run.evidence, run.trace, run.lease, run.approvals];
    all.push(keys.approval(approval), keys.ledger(approval));
    for (const key of all) {
      expect(key.startsWith('loopgate:run:{r-Ev1}:')).toBe(true);
      expect(hashTag(key)).toBe('r-Ev1');
    }
    expect(run.header).toBe('loopgate:run:{r-Ev1}:header');
  });

  it('keeps cross-run indexes out of any run slot', () => {
    for (const key of [
      keys.channelIndex('T1', 'C1'),
      keys.userIndex('T1', 'U1'),
      keys.pendingApprovals,
      keys.audit,
    ]) {
      expect(key).not.toMatch(/[{}]/);
      expect(key.startsWith('loopgate:')).toBe(true);
    }
    expect(() => keys.channelIndex('T1', 'C{1}')).toThrow(TypeError);
  });

  it('refuses ids that are not run or approval ids', () => {
    expect(() => keys.run('r:1')).toThrow(TypeError);
    expect(() => keys.approval('r-Ev1')).toThrow(TypeError);
  });
});
