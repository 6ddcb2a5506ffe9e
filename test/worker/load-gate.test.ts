import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { judgeLoad, type LoadVerdict, startLoadGate } from '../../src/worker/load-gate.js';
import { RequesterSlots } from '../../src/worker/requester-slots.js';

const limits = { maxEventLoopDelayMs: 100, maxHeapUsedRatio: 0.8 };

describe('judgeLoad', () => {
  it('stops taking jobs over either limit, and takes them again only well under it', () => {
    expect(judgeLoad({ eventLoopDelayMs: 20, heapUsedRatio: 0.3 }, limits, true)).toEqual({ admit: true });
    expect(judgeLoad({ eventLoopDelayMs: 150, heapUsedRatio: 0.3 }, limits, true)).toEqual({
      admit: false,
      reason: 'event_loop_delay',
    });
    expect(judgeLoad({ eventLoopDelayMs: 20, heapUsedRatio: 0.85 }, limits, true)).toEqual({
      admit: false,
      reason: 'memory',
    });
    // Closed: 80 ms is under the limit but not under half of it; 0.75 is not under 90 % of 0.8.
    expect(judgeLoad({ eventLoopDelayMs: 80, heapUsedRatio: 0.3 }, limits, false).admit).toBe(false);
    expect(judgeLoad({ eventLoopDelayMs: 10, heapUsedRatio: 0.75 }, limits, false).admit).toBe(false);
    expect(judgeLoad({ eventLoopDelayMs: 40, heapUsedRatio: 0.5 }, limits, false).admit).toBe(true);
  });

  it('never admits over a limit, and a closed gate never reopens where an open one would close', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1_000, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (eventLoopDelayMs, heapUsedRatio) => {
          const sample = { eventLoopDelayMs, heapUsedRatio };
          const open: LoadVerdict = judgeLoad(sample, limits, true);
          const closed: LoadVerdict = judgeLoad(sample, limits, false);
          const over =
            eventLoopDelayMs > limits.maxEventLoopDelayMs || heapUsedRatio > limits.maxHeapUsedRatio;
          if (over) expect(open.admit).toBe(false);
          if (closed.admit) expect(open.admit).toBe(true);
        },
      ),
    );
  });
});

describe('startLoadGate', () => {
  it('stops taking jobs while the event loop is blocked and takes them again once it keeps up', async () => {
    const changes: boolean[] = [];
    const gate = startLoadGate({
      ...limits,
      sampleEveryMs: 50,
      heapUsedRatio: () => 0.1,
      admission: { stopTaking: () => changes.push(false), startTaking: () => changes.push(true) },
    });
    try {
      await new Promise((r) => setTimeout(r, 120));
      const until = Date.now() + 300;
      while (Date.now() < until) {
        // A CPU-bound stretch: the event loop cannot run its timers.
      }
      // Other load on a shared machine may close the gate too; what matters: it closed, then reopened.
      await expect
        .poll(() => changes[0] === false && changes.at(-1) === true, { timeout: 10_000 })
        .toBe(true);
    } finally {
      gate.stop();
    }
  });

  it('stops taking jobs while the heap is over its share of the limit', async () => {
    let ratio = 0.9;
    const changes: boolean[] = [];
    const gate = startLoadGate({
      ...limits,
      sampleEveryMs: 20,
      heapUsedRatio: () => ratio,
      admission: { stopTaking: () => changes.push(false), startTaking: () => changes.push(true) },
    });
    try {
      await expect.poll(() => changes, { timeout: 10_000 }).toEqual([false]);
      expect(gate.admitting()).toBe(false);
      ratio = 0.5;
      await expect.poll(() => changes, { timeout: 10_000 }).toEqual([false, true]);
    } finally {
      gate.stop();
    }
  });
});

describe('RequesterSlots', () => {
  it('gives one requester at most their share, others are not affected, releases are idempotent', () => {
    const slots = new RequesterSlots(2);
    const a1 = slots.tryTake('UA');
    const a2 = slots.tryTake('UA');
    expect(a1).not.toBeNull();
    expect(a2).not.toBeNull();
    expect(slots.tryTake('UA')).toBeNull();
    expect(slots.tryTake('UB')).not.toBeNull();
    a1?.();
    a1?.();
    expect(slots.held('UA')).toBe(1);
    expect(slots.tryTake('UA')).not.toBeNull();
    expect(slots.tryTake('UA')).toBeNull();
  });

  it('never holds more than the cap for anyone, whatever the order of takes and releases', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.tuple(fc.constantFrom('UA', 'UB', 'UC'), fc.boolean()), { maxLength: 60 }),
        (cap, ops) => {
          const slots = new RequesterSlots(cap);
          const held = new Map<string, (() => void)[]>();
          for (const [who, take] of ops) {
            const mine = held.get(who) ?? [];
            held.set(who, mine);
            if (take) {
              const release = slots.tryTake(who);
              expect(release === null).toBe(mine.length >= cap);
              if (release) mine.push(release);
            } else {
              mine.pop()?.();
            }
            expect(slots.held(who)).toBe(mine.length);
            expect(slots.held(who)).toBeLessThanOrEqual(cap);
          }
        },
      ),
    );
  });
});
