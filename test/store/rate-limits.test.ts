import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type StoreFixture, storeFixture } from './redis-fixture.js';

let fx: StoreFixture;
beforeEach(() => {
  fx = storeFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

const MINUTE = 60_000;
/** The start of the current window (windows expire ten minutes after they end). */
const T0 = Math.floor(Date.now() / MINUTE) * MINUTE;

describe('RateLimits count each event once', () => {
  it('gives every delivery of an event the same verdict, however late it comes', async () => {
    const hit = (eventId: string, now: number) =>
      fx.store.rates.hit('user', ['T1', 'U1'], 2, MINUTE, { eventId, at: T0 + 1_000, now });
    expect(await hit('Ev1', T0 + 1_000)).toEqual({ ok: true, fresh: true });
    expect(await hit('Ev2', T0 + 2_000)).toEqual({ ok: true, fresh: true });
    expect(await hit('Ev3', T0 + 3_000)).toEqual({ ok: false, fresh: true, retryAfterMs: 57_000 });
    // Slack's retries, immediately, a minute and five minutes later: counted in the message's window.
    for (const later of [T0 + 3_500, T0 + 61_000, T0 + 301_000]) {
      expect(await hit('Ev1', later)).toMatchObject({ ok: true, fresh: false });
      expect(await hit('Ev3', later)).toMatchObject({ ok: false, fresh: false });
    }
    // A message of the next minute is counted there.
    expect(
      await fx.store.rates.hit('user', ['T1', 'U1'], 2, MINUTE, {
        eventId: 'Ev4',
        at: T0 + MINUTE,
        now: T0 + MINUTE,
      }),
    ).toEqual({ ok: true, fresh: true });
  });

  it('allows exactly `limit` distinct events of a window, whatever the deliveries and their order', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 7 }), { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 1, max: 5 }),
        async (deliveries, limit) => {
          const parts = ['T1', `U${run++}`];
          const verdicts = new Map<number, boolean>();
          for (const [i, event] of deliveries.entries()) {
            const v = await fx.store.rates.hit('user', parts, limit, MINUTE, {
              eventId: `Ev${event}`,
              at: T0,
              now: T0 + i,
            });
            expect(v.fresh).toBe(!verdicts.has(event));
            if (verdicts.has(event)) expect(v.ok).toBe(verdicts.get(event));
            verdicts.set(event, v.ok);
          }
          const allowed = [...verdicts.values()].filter(Boolean).length;
          expect(allowed).toBe(Math.min(limit, verdicts.size));
        },
      ),
      { numRuns: 60 },
    );
  });
});
