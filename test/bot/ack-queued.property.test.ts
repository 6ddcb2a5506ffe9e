/**
 * Property: whatever Redis does to the bot's writes, an event is acked (HTTP 200) only when its start job
 * is in the queue, and Slack's redeliveries (until one is acked) leave exactly one job per acked event.
 * The queue's writes fail on a generated schedule; events arrive together, so batches mix them.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startJobId } from '../../src/queue/index.js';
import { appMentionEvent, eventBody, eventEnvelope } from '../fakes/slack-signing.js';
import { type BotFixture, CHANNEL, startBotFixture } from './bot-fixture.js';

let fx: BotFixture;
beforeAll(async () => {
  fx = await startBotFixture();
});
afterAll(async () => {
  await fx.cleanup();
});

/** Slack's first delivery and its three redeliveries (X-Slack-Retry-Num 1 to 3). */
const DELIVERIES = [undefined, 1, 2, 3] as const;

describe('acks and the queue', () => {
  it('an event acked 200 always has its job queued, once, however the queue fails', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 24 }),
        async (events, failures) => {
          run++;
          let call = 0;
          const addBulk = fx.queue.addBulk.bind(fx.queue);
          const spy = vi.spyOn(fx.queue, 'addBulk').mockImplementation((jobs) => {
            const fail = failures[call++ % failures.length];
            return fail ? Promise.reject(new Error('Connection is closed.')) : addBulk(jobs);
          });
          try {
            const envelopes = Array.from({ length: events }, (_, i) => {
              const user = `U0P${run}X${i}`;
              return eventEnvelope(
                fx.id,
                appMentionEvent(fx.id, { channel: CHANNEL, user, text: `<@${fx.fake.botUserId}> q${i}` }),
              );
            });
            const acked = await Promise.all(
              envelopes.map(async (envelope) => {
                for (const retryNum of DELIVERIES) {
                  const res = await fx.post(eventBody(envelope), retryNum === undefined ? {} : { retryNum });
                  const job = await fx.queue.getJob(startJobId(envelope.event_id));
                  if (res.status === 200) {
                    expect(job?.id).toBe(startJobId(envelope.event_id));
                    return true;
                  }
                  expect(res.status).toBe(500);
                  // Every write failed: nothing of it is in Redis.
                  expect(job).toBeUndefined();
                }
                return false;
              }),
            );
            await fx.bot.idle();
            const ids = (await fx.jobs()).map((j) => j.id);
            for (const [i, envelope] of envelopes.entries()) {
              const count = ids.filter((id) => id === startJobId(envelope.event_id)).length;
              expect(count).toBe(acked[i] ? 1 : 0);
            }
          } finally {
            spy.mockRestore();
          }
        },
      ),
      {
        numRuns: 25,
        // The schedules that matter most, always tried: every write fails (all four deliveries answered
        // 500, nothing queued), none fails, and alternations that fail a batch mixing several events.
        examples: [
          [1, [true]],
          [1, [false]],
          [4, [true, false]],
          [4, [false, true]],
          [3, [true, true, false]],
        ],
      },
    );
  }, 120_000);
});
