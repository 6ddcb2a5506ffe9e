/**
 * Properties of the shared Slack rate budget's Lua (takeSlackSlot-3.lua) on the real Redis:
 * - callers waiting in line get their slots in order of rank (priority, then arrival), however their
 *   polls interleave, and a caller that does not wait never takes a slot while someone waits;
 * - over any run, the slots granted never exceed the burst plus one per interval of Redis time elapsed.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SlotRequest } from '../../src/store/budget/slack-budget-store.js';
import { type StoreFixture, storeFixture } from './redis-fixture.js';

let fx: StoreFixture;
let budgets = 0;
beforeAll(() => {
  fx = storeFixture();
});
afterAll(async () => {
  await fx.cleanup();
});

/** A budget of its own for each example. */
const freshBudget = () => ['T0PROP', 'chat.postMessage', `C${++budgets}`];

const redisNowMs = async () => {
  const [s, us] = await fx.redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
};

describe('the Slack rate budget (Lua), as properties', () => {
  it('grants waiting callers in order of rank whatever the order of their polls; a non-waiting caller never jumps the line', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.integer({ min: 0, max: 1_000 }), { minLength: 2, maxLength: 8 }),
        fc.array(fc.nat(), { minLength: 40, maxLength: 120 }),
        fc.array(fc.boolean(), { minLength: 40, maxLength: 120 }),
        async (ranks, polls, intruders) => {
          const parts = freshBudget();
          // One call every 5 ms, no burst, nothing promised ahead: a poll finds a free slot now and then,
          // and the line alone decides who may take it.
          const base: Omit<SlotRequest, 'member' | 'rank'> = {
            intervalMs: 5,
            burst: 1,
            headroom: 0,
            horizonMs: 0,
            staleMs: 600_000,
          };
          // Someone took the only slot of the burst: everyone after must queue at first.
          const first = await fx.store.slackBudget.take(parts, { ...base, member: null, rank: 0 });
          expect(first.granted).toBe(true);
          // Everyone joins the line (the burst is used: the first try of a member that is not first fails
          // only when someone ranked before it waits; join in a random order and record the line).
          const members = ranks.map((rank, i) => ({ id: `m${i}`, rank }));
          const granted: number[] = [];
          const waiting = new Set(members.map((_, i) => i));
          const poll = async (i: number) => {
            const m = members[i] as { id: string; rank: number };
            const v = await fx.store.slackBudget.take(parts, { ...base, member: m.id, rank: m.rank });
            if (v.granted) {
              granted.push(m.rank);
              waiting.delete(i);
            }
          };
          // Everyone asks once first (in index order, which is not rank order), then polls interleave.
          const joinOrder = members.map((_, i) => i);
          const joinGrants: number[] = [];
          for (const i of joinOrder) {
            const before = granted.length;
            await poll(i);
            if (granted.length > before) joinGrants.push(i);
          }
          for (let k = 0; k < polls.length && waiting.size > 0; k++) {
            const left = [...waiting];
            await poll(left[(polls[k] as number) % left.length] as number);
            if (intruders[k] && waiting.size > 0) {
              const v = await fx.store.slackBudget.take(parts, { ...base, member: null, rank: 0 });
              expect(v.granted).toBe(false);
            }
          }
          // Drain: whoever still waits polls in rank order until served.
          for (let guard = 0; waiting.size > 0 && guard < 1_000; guard++) {
            for (const i of [...waiting]) await poll(i);
            await new Promise((resolve) => setTimeout(resolve, 2));
          }
          expect(waiting.size).toBe(0);
          // A member granted at its first ask was ahead of everyone still to join; after that, rank order.
          const queued = granted.slice(joinGrants.length);
          expect(queued).toEqual([...queued].sort((a, b) => a - b));
          for (const i of joinGrants) {
            const rank = (members[i] as { rank: number }).rank;
            const waitingBefore = members.slice(0, i).filter((_, j) => !joinGrants.includes(j));
            expect(waitingBefore.every((m) => m.rank >= rank)).toBe(true);
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('never grants more than the burst and one slot per interval of elapsed time', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 3 }),
        fc.array(fc.integer({ min: 0, max: 15 }), { minLength: 10, maxLength: 40 }),
        async (burst, headroomPick, gaps) => {
          const parts = freshBudget();
          const intervalMs = 40;
          const headroom = Math.min(headroomPick, burst - 1);
          const started = await redisNowMs();
          let grants = 0;
          for (const gap of gaps) {
            if (gap > 0) await new Promise((resolve) => setTimeout(resolve, gap));
            const v = await fx.store.slackBudget.take(parts, {
              intervalMs,
              burst,
              headroom,
              member: null,
              rank: 0,
              horizonMs: 0,
              staleMs: 60_000,
            });
            if (v.granted) grants++;
          }
          const elapsed = (await redisNowMs()) - started;
          // GCRA: the first call may use the burst (less the headroom); then one per interval.
          expect(grants).toBeLessThanOrEqual(burst - headroom + Math.floor(elapsed / intervalMs) + 1);
          expect(grants).toBeGreaterThanOrEqual(1);
        },
      ),
      { numRuns: 30 },
    );
  });
});
