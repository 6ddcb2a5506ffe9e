/**
 * The timers a pending round gets (src/queue/approval-timers.ts), on a real queue: the on-call watch is
 * added only when an on-call source may decide the round (now or once it escalates), one cache period
 * away, and never when the round expires first.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addApprovalTimers, type TimedRound } from '../../src/queue/approval-timers.js';
import { createRedisConnection, createRunsQueue, type RunsQueue } from '../../src/queue/index.js';
import { approvalIdFor } from '../../src/store/index.js';

const URL = 'redis://127.0.0.1:6379';
const NOW = 1_767_000_000_000;
const MIN = 60_000;
const runId = 'r-Ev08WATCH';
const approvalId = approvalIdFor(runId, 'call_1');
const oncall = [
  {
    source: { provider: 'pagerduty' as const, schedule: 'P1ABC', tokenEnv: 'PAGERDUTY_API_TOKEN' },
    fallback: { users: ['U0MGR'], groups: [] },
  },
];

const round = (over: Partial<TimedRound> = {}): TimedRound => ({
  runId,
  approvalId,
  createdAt: NOW,
  expiresAt: NOW + 60 * MIN,
  approvers: { users: ['U0MGR'], groups: [] },
  ...over,
});

let prefix: string;
let producer: Redis;
let queue: RunsQueue;
beforeEach(() => {
  prefix = `{lgtest-${randomBytes(6).toString('hex')}}`;
  producer = createRedisConnection(URL, 'producer');
  queue = createRunsQueue(producer, prefix);
});
afterEach(async () => {
  await queue.obliterate({ force: true });
  await queue.close();
  await producer.quit();
});

const watches = async () =>
  (await queue.getDelayed()).filter((j) => j.name === 'oncall_watch').map((j) => [j.data, j.opts.delay]);

describe('the on-call watch of a pending round', () => {
  it('is not added when only people and groups decide', async () => {
    await addApprovalTimers(queue, round(), NOW, MIN);
    expect(await watches()).toEqual([]);
    expect((await queue.getDelayed()).map((j) => j.name)).toEqual(['expire']);
  });

  it('is added one period away when an on-call source decides, or will after escalation', async () => {
    await addApprovalTimers(queue, round({ approvers: { users: [], groups: [], oncall } }), NOW, MIN);
    expect(await watches()).toEqual([[{ v: 1, runId, approvalId, tick: 1 }, MIN]]);
    await queue.obliterate({ force: true });
    const escalation = { to: { users: [], groups: [], oncall }, afterMs: 10 * MIN };
    await addApprovalTimers(queue, round({ escalation }), NOW, MIN);
    expect(await watches()).toEqual([[{ v: 1, runId, approvalId, tick: 1 }, MIN]]);
  });

  it('is not added when the round expires before the first look', async () => {
    const soon = round({ approvers: { users: [], groups: [], oncall }, expiresAt: NOW + MIN });
    await addApprovalTimers(queue, soon, NOW, MIN);
    expect(await watches()).toEqual([]);
  });
});
