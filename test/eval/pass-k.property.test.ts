/** pass^k (τ-bench): C(c,k)/C(n,k) per task, averaged over tasks. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { meanPassHatK, passHatK } from '../../src/eval/pass-k.js';

/** The definition itself: of all k-subsets of the n trials, the share made only of passed trials. */
function bySubsets(n: number, c: number, k: number): number {
  let all = 0;
  let passing = 0;
  for (let mask = 0; mask < 1 << n; mask++) {
    let bits = 0;
    for (let i = 0; i < n; i++) if (mask & (1 << i)) bits++;
    if (bits !== k) continue;
    all++;
    // Trials 0..c-1 passed.
    if ((mask & ~((1 << c) - 1)) === 0) passing++;
  }
  return passing / all;
}

const trials = fc
  .integer({ min: 1, max: 10 })
  .chain((n) =>
    fc.record({ n: fc.constant(n), c: fc.integer({ min: 0, max: n }), k: fc.integer({ min: 1, max: n }) }),
  );

describe('pass^k', () => {
  it('equals the share of k-subsets of trials that all passed', () => {
    fc.assert(
      fc.property(trials, ({ n, c, k }) => {
        expect(passHatK(n, c, k)).toBeCloseTo(bySubsets(n, c, k), 12);
      }),
    );
  });

  it('is the success rate at k = 1, 1 when all passed, 0 when fewer than k passed', () => {
    fc.assert(
      fc.property(trials, ({ n, c, k }) => {
        expect(passHatK(n, c, 1)).toBeCloseTo(c / n, 12);
        expect(passHatK(n, n, k)).toBe(1);
        if (c < k) expect(passHatK(n, c, k)).toBe(0);
      }),
    );
  });

  it('never rises as k grows', () => {
    fc.assert(
      fc.property(trials, ({ n, c, k }) => {
        if (k < n) expect(passHatK(n, c, k + 1)).toBeLessThanOrEqual(passHatK(n, c, k) + 1e-12);
      }),
    );
  });

  it('stays finite and within [0, 1] for large n', () => {
    expect(passHatK(1000, 990, 8)).toBeGreaterThan(0.92);
    expect(passHatK(1000, 990, 8)).toBeLessThan(0.93);
  });

  it('refuses impossible counts', () => {
    expect(() => passHatK(3, 4, 1)).toThrow(RangeError);
    expect(() => passHatK(3, 2, 4)).toThrow(RangeError);
    expect(() => passHatK(3, 2, 0)).toThrow(RangeError);
  });

  it('is averaged over tasks, and unknown when a task has fewer than k trials', () => {
    fc.assert(
      fc.property(
        fc.array(trials, { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 10 }),
        (tasks, k) => {
          const mean = meanPassHatK(tasks, k);
          if (tasks.some((t) => t.n < k)) expect(mean).toBeNull();
          else {
            const expected = tasks.reduce((s, t) => s + bySubsets(t.n, t.c, k), 0) / tasks.length;
            expect(mean).toBeCloseTo(expected, 12);
          }
        },
      ),
    );
    expect(
      meanPassHatK(
        [
          { n: 4, c: 4 },
          { n: 4, c: 2 },
        ],
        2,
      ),
    ).toBeCloseTo((1 + 1 / 6) / 2, 12);
  });
});
