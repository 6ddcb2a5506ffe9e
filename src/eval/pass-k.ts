/**
 * pass^k as τ-bench defines it: the chance that k independent trials of a task ALL pass. From n trials of
 * which c passed it is estimated without bias as C(c, k) / C(n, k), then averaged over tasks. pass^1 is
 * the plain success rate; pass^k falls as k grows unless the agent is reliable.
 */

/** C(c, k) / C(n, k), computed as a product so large n never overflows. */
export function passHatK(n: number, c: number, k: number): number {
  if (!Number.isInteger(n) || !Number.isInteger(c) || !Number.isInteger(k) || n < 0 || c < 0 || c > n) {
    throw new RangeError(`pass^k needs whole numbers 0 <= c <= n (got n=${n}, c=${c})`);
  }
  if (k < 1 || k > n) throw new RangeError(`pass^k needs 1 <= k <= n (got k=${k}, n=${n})`);
  let p = 1;
  for (let i = 0; i < k; i++) p *= (c - i) / (n - i);
  return Math.max(0, p);
}

/** The mean of pass^k over tasks, each given as (n trials, c passes); null when some task has fewer than k. */
export function meanPassHatK(tasks: readonly { n: number; c: number }[], k: number): number | null {
  if (tasks.length === 0 || tasks.some((t) => t.n < k)) return null;
  return tasks.reduce((sum, t) => sum + passHatK(t.n, t.c, k), 0) / tasks.length;
}
