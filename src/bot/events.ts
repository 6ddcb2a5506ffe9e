/**
 * Questions arriving as Slack events become `start` jobs, and the event is acked only once its job is in
 * the queue (ack-after-processing.ts holds Bolt's ack back until `messageReceived` resolves). While Redis
 * fails, queueing is retried briefly, within Slack's 3-second budget (QUEUE_DEADLINE_MS in all); a
 * question still not queued makes `messageReceived` reject, the event stays unacked (HTTP 500) and Slack
 * delivers it again: immediately, after about a minute, after about five. The job id is Slack's
 * `event_id`, so a redelivery of a queued event adds nothing. Only when Slack's last redelivery cannot be
 * queued either is the person asked to send the message again. Notes to the person (channel not enabled,
 * run waiting for approval) go out once per event: not again on Slack's redeliveries.
 */
import { ZodError } from 'zod';
import { LoopgateError } from '../loop/errors.js';
import type { StartJobData } from '../queue/index.js';
import { escapeMrkdwn } from '../slack/mrkdwn.js';
import { runIdForEvent } from '../store/ids.js';
import type { ThreadRef } from '../store/index.js';
import { paneContextFor } from './agent-pane.js';
import type { BotContext } from './context.js';
import { classifyMessage, type Inbound } from './inbound.js';
import { withRetries } from './retry.js';
import type { MessageEvent } from './slack-payloads.js';

interface ReceivedMessage {
  event: MessageEvent;
  eventId: string;
  teamId: string;
  botUserId: string;
  /** Slack's retry count of this delivery (undefined for the first). */
  retryNum: number | undefined;
}

/** Slack redelivers an unacknowledged event up to three times (X-Slack-Retry-Num 1 to 3). */
const LAST_SLACK_RETRY = 3;

/**
 * Longest time from an event's arrival to its answer when its job cannot be queued: under Slack's 3 s,
 * with room for the network, so that Slack sees an error (and delivers again) rather than a timeout.
 */
const QUEUE_DEADLINE_MS = 2_500;

/** Waits between attempts to add a start job while Redis fails; all of them end well within the deadline. */
const QUEUE_RETRY_DELAYS_MS = [50, 150, 300, 600];

/** A question's start job could not be queued (in time): the event is left unacked for Slack to redeliver. */
export class NotQueuedError extends LoopgateError {
  constructor(
    readonly eventId: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super('not_queued', `the start job of event ${eventId} was not queued: ${reason}`, options);
  }
}

function channelAllowed(ctx: Pick<BotContext, 'policy'>, channelId: string): boolean {
  const allow = ctx.policy.channels.allow;
  return allow.length === 0 || allow.includes(channelId);
}

/**
 * Takes a message event: resolves once its start job is in the queue, or once it is deliberately not
 * taken (ignored, or refused with a note to the person); rejects with NotQueuedError when Redis did not
 * take it within `deadlineMs` (default QUEUE_DEADLINE_MS). Work still running at the deadline goes on in
 * the background: a job it queues late is the one Slack's redelivery then finds.
 */
export async function messageReceived(
  ctx: BotContext,
  received: ReceivedMessage,
  deadlineMs = QUEUE_DEADLINE_MS,
): Promise<void> {
  const taking = takeMessage(ctx, received);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new NotQueuedError(received.eventId, `Redis did not answer within ${deadlineMs} ms`)),
      deadlineMs,
    );
  });
  try {
    await Promise.race([taking, deadline]);
  } catch (error) {
    taking.catch((late: unknown) =>
      ctx.logger.warn({ eventId: received.eventId, err: late }, 'message event failed after its deadline'),
    );
    if (received.retryNum === LAST_SLACK_RETRY) noteNotQueued(ctx, received);
    throw error instanceof NotQueuedError
      ? error
      : new NotQueuedError(received.eventId, 'Redis failed', { cause: error });
  } finally {
    clearTimeout(timer);
  }
}

/** Slack will not deliver this event again: the person who wrote it is the last one who can. */
function noteNotQueued(ctx: BotContext, received: ReceivedMessage): void {
  const inbound = classifyMessage(received.event, received.botUserId);
  if (!inbound.take) return;
  const fields = { eventId: received.eventId, channel: inbound.channelId };
  ctx.logger.error(fields, "start job lost: Slack's last redelivery could not be queued either");
  const to = {
    channel: inbound.channelId,
    user: inbound.userId,
    threadTs: inbound.inThread ? inbound.threadTs : undefined,
  };
  ctx.background.run('not queued note', () => ctx.slack.ephemeral(to, NOT_QUEUED_TEXT), fields);
}

async function takeMessage(ctx: BotContext, received: ReceivedMessage): Promise<void> {
  const inbound = classifyMessage(received.event, received.botUserId);
  const fields = { eventId: received.eventId, channel: received.event.channel };
  if (!inbound.take) {
    ctx.logger.debug({ ...fields, reason: inbound.reason }, 'message event ignored');
    return;
  }
  const firstDelivery = received.retryNum === undefined || received.retryNum === 0;
  const to = {
    channel: inbound.channelId,
    user: inbound.userId,
    threadTs: inbound.inThread ? inbound.threadTs : undefined,
  };
  const note = (label: string, text: string, force = false) => {
    if (firstDelivery || force) ctx.background.run(label, () => ctx.slack.ephemeral(to, text), fields);
  };
  const thread: ThreadRef = {
    teamId: received.teamId,
    channelId: inbound.channelId,
    threadTs: inbound.threadTs,
  };

  if (!channelAllowed(ctx, inbound.channelId)) {
    // A follow-up in a thread of a channel that was removed from the list is ignored silently.
    if (inbound.kind !== 'thread_reply')
      note('channel not enabled note', notEnabledText(ctx.policy.channels.allow));
    return;
  }
  let activeRunId: string | null = null;
  if (inbound.kind === 'thread_reply') {
    activeRunId = await ctx.store.threads.activeRun(thread);
    if (!activeRunId && (await ctx.store.threads.history(thread)).length === 0) {
      ctx.logger.debug(fields, 'reply in a thread loopgate does not work in: ignored');
      return;
    }
  }
  if (inbound.text === '') {
    if (inbound.kind !== 'thread_reply') note('empty question note', EMPTY_QUESTION_TEXT);
    return;
  }
  const refused = await inboundRefusal(ctx, thread, inbound, received.eventId);
  if (refused !== null) {
    ctx.logger.info(
      { ...fields, user: inbound.userId, refusal: refused.text, retryNum: received.retryNum },
      'message refused: inbound limit',
    );
    // Told once: by the delivery that counted the event, whichever it was.
    note('inbound limit note', refused.text, refused.fresh);
    return;
  }

  // A question in the agent pane (a DM thread): what the person looks at goes with it, as data.
  const viewing = inbound.kind === 'dm' ? await paneContextFor(ctx, thread, inbound.text, fields) : undefined;
  const queued = await queueStart(ctx, received, inbound, viewing, fields);
  if (queued === 'invalid') {
    // A redelivery would be just as invalid: acked, logged, and the person told.
    note('invalid job note', INVALID_JOB_TEXT);
    return;
  }
  ctx.logger.info({ ...fields, kind: inbound.kind, retryNum: received.retryNum }, 'start job queued');

  if (inbound.inThread && firstDelivery) {
    ctx.background.run(
      'waiting-for-approval note',
      () => noteIfAwaitingApproval(ctx, thread, to, activeRunId),
      fields,
    );
  }
}

/**
 * Queues the question's start job (retried while Redis fails; a failure left is thrown, so the event
 * stays unacked), under the event's span: the run's trace starts with it and the worker's stretches are
 * its children. 'invalid': the job data failed validation and nothing was queued.
 */
async function queueStart(
  ctx: BotContext,
  received: ReceivedMessage,
  inbound: Extract<Inbound, { take: true }>,
  viewing: StartJobData['viewing'],
  fields: Record<string, unknown>,
): Promise<'queued' | 'invalid'> {
  // The run's trace starts with the event: the worker's stretches of the run are its children.
  const span = ctx.telemetry?.startSpan(`slack.event ${inbound.kind}`, {
    'slack.event.id': received.eventId,
    'slack.team.id': received.teamId,
    'slack.channel.id': inbound.channelId,
    'slack.thread.ts': inbound.threadTs,
    'loopgate.run.id': runIdForEvent(received.eventId),
    ...(received.retryNum === undefined ? {} : { 'slack.retry_num': received.retryNum }),
  });
  const data: StartJobData = {
    ...(viewing ? { viewing } : {}),
    ...(span && ctx.telemetry ? { trace: ctx.telemetry.carrierOf(span) } : {}),
    v: 1,
    eventId: received.eventId,
    teamId: received.teamId,
    channelId: inbound.channelId,
    threadTs: inbound.threadTs,
    messageTs: inbound.ts,
    userId: inbound.userId,
    text: inbound.text,
    kind: inbound.kind,
    receivedAt: ctx.clock.now(),
  };
  try {
    const add = () => ctx.starts.addStart(data);
    const send = () =>
      ctx.telemetry
        ? ctx.telemetry.queueSend(
            { queue: ctx.queue.name, job: 'start', runId: runIdForEvent(received.eventId) },
            span,
            add,
          )
        : add();
    await withRetries(send, {
      delaysMs: QUEUE_RETRY_DELAYS_MS,
      // Invalid job data stays invalid: only Redis failures are worth another attempt.
      retryable: (err) => !(err instanceof ZodError),
      onRetry: (err, retry) =>
        ctx.logger.warn({ ...fields, err, retry }, 'could not queue the start job; retrying'),
    });
  } catch (err) {
    span?.setAttribute('error.type', err instanceof ZodError ? 'invalid_job' : 'queue_unreachable');
    span?.end();
    if (!(err instanceof ZodError)) throw err;
    ctx.logger.error({ ...fields, err }, 'start job data invalid: not queued');
    return 'invalid';
  }
  span?.end();
  return 'queued';
}

const MINUTE_MS = 60_000;

/**
 * Why a message is not taken, or null: it is too long, its sender or thread sent too many this minute,
 * or its thread already has as many messages waiting as it may hold. Nothing is queued for a refusal.
 * Every delivery is checked: the limits count an event once (by its event id, in the minute its message
 * was written), so Slack's retries get the verdict of the event, whichever delivery was counted first.
 * `fresh`: this delivery decided the refusal (the one to tell the person).
 */
async function inboundRefusal(
  ctx: BotContext,
  thread: ThreadRef,
  inbound: Extract<Inbound, { take: true }>,
  eventId: string,
): Promise<{ text: string; fresh: boolean } | null> {
  const limits = ctx.policy.inbound;
  if (inbound.text.length > limits.maxQuestionChars) {
    return {
      text: `Your message is ${count(inbound.text.length)} characters long; I take questions of up to ${count(limits.maxQuestionChars)}. Please shorten it and send it again.`,
      fresh: false,
    };
  }
  const now = ctx.clock.now();
  const event = { eventId, at: messageTimeMs(inbound.ts, now), now };
  const user = await ctx.store.rates.hit(
    'user',
    [thread.teamId, inbound.userId],
    limits.perUserPerMinute,
    MINUTE_MS,
    event,
  );
  if (!user.ok) {
    return {
      text: `You have sent me ${limits.perUserPerMinute} messages in the last minute, which is as many as I take. Please try again in ${seconds(user.retryAfterMs)}.`,
      fresh: user.fresh,
    };
  }
  const inThread = await ctx.store.rates.hit(
    'thread',
    [thread.teamId, thread.channelId, thread.threadTs],
    limits.perThreadPerMinute,
    MINUTE_MS,
    event,
  );
  if (!inThread.ok) {
    return {
      text: `This thread has had ${limits.perThreadPerMinute} messages for me in the last minute, which is as many as I take. Please try again in ${seconds(inThread.retryAfterMs)}.`,
      fresh: inThread.fresh,
    };
  }
  if (inbound.inThread && (await ctx.store.threads.inboxFull(thread))) {
    return {
      text: `${limits.maxQueuedPerThread} messages are already waiting in this thread for the run working here. Please send yours again once it has answered.`,
      fresh: false,
    };
  }
  return null;
}

/** A message's ts (`<seconds>.<micros>`) in ms; `now` when it cannot be read. */
function messageTimeMs(ts: string, now: number): number {
  const ms = Math.floor(Number(ts) * 1000);
  return Number.isFinite(ms) && ms > 0 ? ms : now;
}

const count = (n: number) => n.toLocaleString('en-US');
const seconds = (ms: number) => {
  const s = Math.max(1, Math.ceil(ms / 1000));
  return `${s} second${s === 1 ? '' : 's'}`;
};

/**
 * When the thread's run waits for approval, the new message is queued behind it (by the worker); the
 * person is told so, with links to the pending cards, so the pending approval does not go unnoticed.
 */
async function noteIfAwaitingApproval(
  ctx: BotContext,
  thread: ThreadRef,
  to: { channel: string; user: string; threadTs: string | undefined },
  knownRunId: string | null,
): Promise<void> {
  const runId = knownRunId ?? (await ctx.store.threads.activeRun(thread));
  if (!runId) return;
  const pending = (await ctx.store.approvals.listForRun(runId)).filter((a) => a.status === 'pending');
  if (pending.length === 0) return;
  const links = await Promise.all(
    pending.slice(0, 5).map(async (approval) => {
      const tool = `\`${escapeMrkdwn(approval.tool)}\``;
      const link = approval.card
        ? await ctx.slack.permalink(approval.card.channel, approval.card.ts)
        : undefined;
      return link ? `<${link}|${tool}>` : tool;
    }),
  );
  const more = pending.length > links.length ? ` and ${pending.length - links.length} more` : '';
  await ctx.slack.ephemeral(
    to,
    `The run in this thread is waiting for approval of ${links.join(', ')}${more}. ` +
      'Your message is queued and will be answered when that run finishes.',
  );
}

const INVALID_JOB_TEXT =
  'Sorry, I could not take your message: it did not make a valid job (a fault on my side, logged for the operators).';

const NOT_QUEUED_TEXT =
  'Sorry, I could not take your message just now (my job queue is unavailable). Please send it again in a few minutes.';

const EMPTY_QUESTION_TEXT =
  'Ask me something after the mention, for example "is payments healthy?", or try `/loopgate help`.';

function notEnabledText(allow: readonly string[]): string {
  const where = allow.map((id) => `<#${id}>`).join(', ');
  return `loopgate is not enabled in this conversation. Ask me in ${where}.`;
}
