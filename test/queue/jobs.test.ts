import { UnrecoverableError } from 'bullmq';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cancelJobId,
  DEFAULT_JOB_OPTIONS,
  expireJobId,
  jobIdFor,
  jobOptions,
  parseJobData,
  queuePrefix,
  resumeJobId,
  startJobId,
} from '../../src/queue/index.js';
import { approvalIdFor } from '../../src/store/index.js';

const start = {
  v: 1,
  eventId: 'Ev08ABCDEF',
  teamId: 'T0TEAM',
  channelId: 'C0OPS',
  threadTs: '1767000000.000100',
  messageTs: '1767000000.000100',
  userId: 'U0ALICE',
  text: '<@U0BOT> is payments healthy?',
  kind: 'mention',
  receivedAt: 1_767_000_000_123,
};
const approvalId = approvalIdFor('r-Ev08ABCDEF', 'call_1');

describe('job ids', () => {
  it('never contain ":", are never all digits, and are stable', () => {
    const builders = [startJobId, resumeJobId, cancelJobId, expireJobId];
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 200 }), (key) => {
        for (const build of builders) {
          const id = build(key);
          expect(id).not.toContain(':');
          expect(id).not.toMatch(/^\d+$/);
          expect(build(key)).toBe(id);
        }
      }),
    );
  });

  it('keep distinct keys distinct (encoding, not lossy replacement)', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (a, b) => {
        fc.pre(a !== b);
        expect(startJobId(a)).not.toBe(startJobId(b));
      }),
    );
    expect(startJobId('a:b')).not.toBe(startJobId('a_b'));
  });

  it('come from the Slack event id, the approval id and the run id', () => {
    expect(jobIdFor(parseJobData('start', start))).toBe('start-Ev08ABCDEF');
    expect(resumeJobId(approvalId)).toBe(`resume-${approvalId}`);
    expect(expireJobId(approvalId)).toBe(`expire-${approvalId}`);
    expect(cancelJobId('r-Ev08ABCDEF')).toBe('cancel-r-Ev08ABCDEF');
    expect(() => startJobId('')).toThrow(TypeError);
  });
});

describe('parseJobData', () => {
  it('accepts each job kind', () => {
    expect(parseJobData('start', start)).toEqual({ name: 'start', data: start });
    const resume = { v: 1, runId: 'r-Ev08ABCDEF', approvalId };
    expect(parseJobData('resume', resume)).toEqual({ name: 'resume', data: resume });
    expect(parseJobData('expire', resume)).toEqual({ name: 'expire', data: resume });
    const cancel = { v: 1, runId: 'r-Ev08ABCDEF', by: 'U0BOB' };
    expect(parseJobData('cancel', cancel)).toEqual({ name: 'cancel', data: cancel });
  });

  it.each([
    ['start', { ...start, kind: 'reaction' }, /bad start job data.*kind/s],
    ['start', { ...start, threadTs: 'yesterday' }, /threadTs/],
    ['start', { ...start, extra: 1 }, /extra/],
    ['start', null, /bad start job data/],
    ['start', { ...start, v: 2 }, /version 2; this worker reads version 1/],
    ['resume', { v: 1, runId: 'r-other', approvalId }, /approvalId must belong to runId/],
    ['resume', { v: 1, runId: 'r:x', approvalId: 'x' }, /run id/],
    ['cancel', { v: 1, runId: 'r-1' }, /by/],
    ['restart', { v: 1 }, /unknown job name "restart"/],
  ])('refuses bad %s data with an UnrecoverableError', (name, data, message) => {
    let thrown: unknown;
    try {
      parseJobData(name, data);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(UnrecoverableError);
    expect((thrown as Error).message).toMatch(message);
  });
});

describe('job options and prefix', () => {
  it('retry with exponential backoff and bound what is kept', () => {
    const opts = jobOptions('start', 'start-Ev1');
    expect(opts).toMatchObject({
      jobId: 'start-Ev1',
      attempts: 8,
      backoff: { type: 'exponential', delay: 1000 },
    });
    expect(opts.removeOnComplete).toEqual({ age: 86_400, count: 10_000 });
    expect(opts.removeOnFail).toEqual({ age: 604_800, count: 10_000 });
    expect(opts.delay).toBeUndefined();
    expect(jobOptions('expire', 'expire-x', 1500.2).delay).toBe(1501);
    expect(() => jobOptions('resume', 'resume-x', 10)).toThrow(RangeError);
    // Callers get copies: mutating one job's options never changes the defaults.
    (opts.backoff as { delay: number }).delay = 1;
    expect(DEFAULT_JOB_OPTIONS.backoff.delay).toBe(1000);
  });

  it('requires a hash tag in the queue prefix', () => {
    expect(queuePrefix()).toBe('{loopgate}');
    expect(queuePrefix('{acme-lg}')).toBe('{acme-lg}');
    for (const bad of ['loopgate', '{}', 'a:{b}']) expect(() => queuePrefix(bad)).toThrow(TypeError);
  });
});

describe('sub-agent jobs', () => {
  it('child_start and child_end are validated, get ids of their own, and only child_end may wait', () => {
    const end = { v: 1 as const, runId: 'r-Ev08ABCDEF', childRunId: 'c-0123456789abcdef' };
    expect(parseJobData('child_start', { v: 1, runId: 'c-0123456789abcdef' })).toEqual({
      name: 'child_start',
      data: { v: 1, runId: 'c-0123456789abcdef' },
    });
    expect(parseJobData('child_end', { ...end, watch: 2 }).data).toEqual({ ...end, watch: 2 });
    expect(() => parseJobData('child_end', { ...end, childRunId: 'a:b' })).toThrow(UnrecoverableError);
    expect(() => parseJobData('child_end', { ...end, watch: 0 })).toThrow(UnrecoverableError);
    expect(jobIdFor({ name: 'child_start', data: { v: 1, runId: 'c-01' } })).toBe('child-start-c-01');
    expect(jobIdFor({ name: 'child_end', data: end })).toBe('child-end-c-0123456789abcdef');
    expect(jobIdFor({ name: 'child_end', data: { ...end, watch: 3 } })).toBe(
      'child-end-c-0123456789abcdef.w3',
    );
    expect(jobOptions('child_end', 'child-end-x.w1', 300_000).delay).toBe(300_000);
    expect(() => jobOptions('child_start', 'child-start-x', 10)).toThrow(RangeError);
  });
});
