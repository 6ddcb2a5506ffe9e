/**
 * Events API requests acked only once their listeners are done. Bolt acks an event before its listeners
 * run, so an event whose start job is then never written to Redis (Redis down, then the bot killed) is
 * lost: Slack does not deliver an acked event again. This receiver wraps Bolt's own (HTTP or Socket Mode)
 * and holds that ack back until the app has processed the event: the HTTP 200, or the Socket Mode envelope
 * ack, goes out after the listener returned (for a question: after its job is in the queue). A listener
 * that throws leaves the event unacknowledged: over HTTP the request is answered 500, in Socket Mode the
 * envelope is not acked, and Slack delivers the event again (X-Slack-Retry-Num / retry_attempt; the job id
 * is the event_id, so a redelivery of a queued event adds nothing). Clicks, modal submissions and commands
 * are untouched: their listeners call `ack()` themselves.
 */
import type { App, Receiver, ReceiverEvent } from '@slack/bolt';

/** An Events API delivery (`event_callback`), as opposed to interactivity and commands. */
function isEventCallback(body: ReceiverEvent['body']): boolean {
  return body.type === 'event_callback';
}

/**
 * Processes `event` with Bolt's automatic ack held back, then acks it with what Bolt acked; rejects (with
 * no ack sent) when processing failed.
 */
export async function processThenAck(app: Pick<App, 'processEvent'>, event: ReceiverEvent): Promise<void> {
  if (!isEventCallback(event.body)) return app.processEvent(event);
  let held: { response: unknown } | undefined;
  await app.processEvent({
    ...event,
    ack: async (response?: unknown) => {
      held = { response };
    },
  });
  if (held) await event.ack(held.response);
}

export class AckAfterProcessingReceiver implements Receiver {
  constructor(readonly inner: Receiver) {}

  init(app: App): void {
    // The inner receiver only calls processEvent on the app it is given: a view of the app with that one
    // method replaced, everything else delegated to the app itself.
    const view: App = Object.create(app);
    view.processEvent = (event) => processThenAck(app, event);
    this.inner.init(view);
  }

  start(...args: unknown[]): Promise<unknown> {
    return this.inner.start(...args);
  }

  stop(...args: unknown[]): Promise<unknown> {
    return this.inner.stop(...args);
  }
}
