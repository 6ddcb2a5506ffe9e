import { DelayedError, type Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import type { ModelPort } from '../../src/loop/model-port.js';
import type { Logger } from '../../src/loop/tool-contract.js';
import { runIdForEvent } from '../../src/store/ids.js';
import { advanceRun } from '../../src/worker/advance.js';
import { handleStart } from '../../src/worker/handlers.js';
import { runsProcessor } from '../../src/worker/processor.js';
import { RequesterSlots } from '../../src/worker/requester-slots.js';
import { withRunLease } from '../../src/worker/run-lease.js';
import type { WorkerRuntime } from '../../src/worker/runtime.js';
import { createHarness } from '../support/worker-harness.js';

const logger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => logger };

/** A runtime with only the lease store, whose renewals behave as `renew` says. */
function leaseRuntime(renew: () => Promise<void>, leaseTtlMs: number): WorkerRuntime {
  return {
    store: {
      leases: {
        acquire: async () => ({ acquired: true, fence: 7, ttlMs: leaseTtlMs }),
        renew,
        release: async () => true,
      },
    },
    logger,
    workerId: 'w',
    leaseTtlMs,
  } as unknown as WorkerRuntime;
}

describe('withRunLease', () => {
  it('counts the lease as lost once no renewal was confirmed for a whole lease time', async () => {
    // A renewal that never answers: the event loop or Redis is too slow to confirm it.
    const rt = leaseRuntime(() => new Promise<void>(() => {}), 300);
    const seen = await withRunLease(rt, 'run_1', 'job_1', logger, async (lease) => {
      expect(lease.lost()).toBe(false);
      await expect.poll(() => lease.lost(), { timeout: 10_000, interval: 20 }).toBe(true);
      return { type: 'done' };
    });
    expect(seen).toEqual({ type: 'done' });
  });

  it('keeps a lease whose renewals are confirmed', async () => {
    let renewals = 0;
    const rt = leaseRuntime(async () => {
      renewals++;
    }, 300);
    const seen = await withRunLease(rt, 'run_1', 'job_1', logger, async (lease) => {
      // Renewals confirmed over more than three lease times: the lease was never counted lost.
      await expect.poll(() => renewals, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(10);
      expect(lease.lost()).toBe(false);
      return { type: 'done' };
    });
    expect(seen).toEqual({ type: 'done' });
  });

  it('counts the lease as lost at once when a renewal fails', async () => {
    const rt = leaseRuntime(async () => {
      throw new Error('lease_lost');
    }, 300);
    const seen = await withRunLease(rt, 'run_1', 'job_1', logger, async (lease) => {
      await expect.poll(() => lease.lost(), { timeout: 10_000, interval: 20 }).toBe(true);
      return { type: 'done' };
    });
    expect(seen).toEqual({ type: 'done' });
  });
});

describe('runsProcessor fairness', () => {
  it('puts a question back as delayed, untouched, while its requester holds every slot they may', async () => {
    const slots = new RequesterSlots(1);
    const held = slots.tryTake('U0BUSY');
    expect(held).not.toBeNull();
    // No store: a start job that got past the cap would fail on it.
    const rt = { requesterSlots: slots, stopping: () => false, logger } as unknown as WorkerRuntime;
    const delayedTo: number[] = [];
    const job = {
      id: 'Ev1',
      name: 'start',
      timestamp: Date.now(),
      delay: 0,
      data: {
        v: 1,
        eventId: 'Ev1',
        teamId: 'T1',
        channelId: 'C1',
        threadTs: '1700000000.000100',
        messageTs: '1700000000.000100',
        userId: 'U0BUSY',
        text: 'again?',
        kind: 'mention',
        receivedAt: Date.now(),
      },
      moveToDelayed: async (at: number) => {
        delayedTo.push(at);
      },
    } as unknown as Job;
    const before = Date.now();
    await expect(runsProcessor(rt)(job, 'token')).rejects.toBeInstanceOf(DelayedError);
    expect(delayedTo).toHaveLength(1);
    expect(delayedTo[0]).toBeGreaterThanOrEqual(before + 500);
    expect(slots.held('U0BUSY')).toBe(1);
  });
});

describe('advanceRun with an unconfirmed lease', () => {
  it('hands the run back at a step boundary instead of making another model call, and nothing is asked twice', async () => {
    const asked: number[] = [];
    // Each model call takes a while; four reads, then the answer.
    const model: ModelPort = {
      async complete({ messages }) {
        asked.push(messages.length);
        await new Promise((resolve) => setTimeout(resolve, 400));
        const reads = messages.filter((m) => m.role === 'tool').length;
        const usage = { inputTokens: 1, outputTokens: 1 };
        const model = 'test';
        if (reads < 4) {
          return {
            content: null,
            toolCalls: [{ id: `c${reads}`, name: 'lookup', arguments: `{"service":"s${reads}"}` }],
            usage,
            model,
          };
        }
        return { content: 'all good', toolCalls: [], usage, model };
      },
    };
    const h = await createHarness({ model, leaseTtlMs: 1_000 });
    try {
      const data = h.startJob('status?');
      const runId = await (async () => {
        const rt = h.runtime('w1');
        // The first job creates the run, then its lease renewals reach Redis (the lease stays valid) but
        // their replies are never read: as when a starved event loop cannot confirm them.
        const { leases } = rt.store;
        const starved = {
          acquire: leases.acquire.bind(leases),
          release: leases.release.bind(leases),
          renew: async (...args: Parameters<typeof leases.renew>) => {
            await leases.renew(...args);
            await new Promise(() => {});
          },
        };
        const starvedRt: WorkerRuntime = {
          ...rt,
          store: { ...rt.store, leases: starved } as typeof rt.store,
        };
        const first = await handleStart(starvedRt, data, 'job-1');
        expect(first.type).toBe('busy');
        return runIdForEvent(data.eventId);
      })();
      const handedBack = asked.length;
      expect(handedBack).toBeGreaterThanOrEqual(1);
      expect(handedBack).toBeLessThan(5);
      expect((await h.store.runs.loadRun(runId))?.state.status).toBe('running');

      // Another job continues from what was stored.
      expect(await advanceRun(h.runtime('w2'), runId, 'job-2')).toEqual({ type: 'done' });
      const run = await h.store.runs.loadRun(runId);
      expect(run?.state.stopReason).toBe('completed');
      // Five distinct requests (each with a longer conversation): no step was asked twice.
      expect(asked).toHaveLength(5);
      expect(new Set(asked).size).toBe(5);
    } finally {
      await h.close();
    }
  }, 30_000);
});
