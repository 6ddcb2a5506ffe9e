/** The receiver wrapper that holds Bolt's automatic ack of an event until the event was processed. */
import type { ReceiverEvent } from '@slack/bolt';
import { describe, expect, it } from 'vitest';
import { processThenAck } from '../../src/bot/ack-after-processing.js';

/** A delivery whose real ack records what it was called with, and when (relative to `order`). */
function delivery(body: Record<string, unknown>, order: string[]) {
  const acks: unknown[] = [];
  const event: ReceiverEvent = {
    body,
    ack: async (response?: unknown) => {
      order.push('acked');
      acks.push(response);
    },
  };
  return { event, acks };
}

/** An app that acks at once, as Bolt does for events, then runs `listener`. */
const boltLike = (order: string[], listener: () => Promise<void>) => ({
  processEvent: async (event: ReceiverEvent) => {
    await event.ack();
    order.push('bolt acked');
    await listener();
    order.push('listener done');
  },
});

describe('processThenAck', () => {
  it('an event is acked only after its listener finished', async () => {
    const order: string[] = [];
    const { event, acks } = delivery({ type: 'event_callback', event_id: 'Ev1' }, order);
    await processThenAck(
      boltLike(order, async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        order.push('queued');
      }),
      event,
    );
    expect(order).toEqual(['bolt acked', 'queued', 'listener done', 'acked']);
    expect(acks).toEqual([undefined]);
  });

  it('an event whose processing fails is never acked, and the failure reaches the receiver', async () => {
    const order: string[] = [];
    const { event, acks } = delivery({ type: 'event_callback', event_id: 'Ev2' }, order);
    const failing = boltLike(order, async () => {
      throw new Error('Redis is down');
    });
    await expect(processThenAck(failing, event)).rejects.toThrow('Redis is down');
    expect(acks).toEqual([]);
  });

  it('clicks and commands keep their own ack, called when their listener calls it', async () => {
    const order: string[] = [];
    const { event, acks } = delivery({ type: 'block_actions' }, order);
    await processThenAck(
      boltLike(order, async () => {
        order.push('listener runs');
      }),
      event,
    );
    expect(order).toEqual(['acked', 'bolt acked', 'listener runs', 'listener done']);
    expect(acks).toEqual([undefined]);
  });
});
