/**
 * loopgate in Slack's agent pane (a DM with the app, opened from the top bar or beside a channel):
 * - a new thread gets the policy's suggested prompts (`slack.suggestedPrompts`): `channel` ones while the
 *   person looks at a channel, `dm` ones otherwise;
 * - the conversation they look at (Slack's thread context, updated by `assistant_thread_context_changed`)
 *   is remembered with the thread and handed to each run started there, as data (events.ts, then the
 *   worker puts it in a message of its own that says it is data, never in the system prompt);
 * - the thread's title is its first question.
 * Slack failures are logged and change nothing else: the pane works without prompts or a title. Slack's
 * redeliveries of these events have no second effect: the context is overwritten with the same value,
 * the same prompts replace themselves, and the title is claimed once per thread (HSETNX).
 */
import type { ThreadRef, Viewing } from '../store/index.js';
import type { BotContext } from './context.js';
import type { AssistantThreadEvent } from './slack-payloads.js';

/** Slack's thread title is short; a longer question is cut with an ellipsis. */
const TITLE_CHARS = 80;

/** The conversation the person looks at, when it is one (not the pane's own DM). */
function viewingOf(event: AssistantThreadEvent, teamId: string): Viewing | null {
  const channelId = event.assistant_thread.context.channel_id;
  if (!channelId || channelId === event.assistant_thread.channel_id) return null;
  return { channelId, teamId: event.assistant_thread.context.team_id ?? teamId };
}

const threadOf = (event: AssistantThreadEvent, teamId: string): ThreadRef => ({
  teamId,
  channelId: event.assistant_thread.channel_id,
  threadTs: event.assistant_thread.thread_ts,
});

/** A new pane thread: remembers what the person looks at, and offers the policy's prompts for it. */
export async function assistantThreadStarted(
  ctx: BotContext,
  event: AssistantThreadEvent,
  teamId: string,
): Promise<void> {
  const thread = threadOf(event, teamId);
  const viewing = viewingOf(event, teamId);
  // Recorded even when empty, so the thread is known as a pane thread (its first question titles it).
  await ctx.store.threads.setViewing(thread, viewing ?? { channelId: thread.channelId });
  const config = ctx.policy.slack.suggestedPrompts;
  const prompts = viewing && !viewing.channelId.startsWith('D') ? config.channel : config.dm;
  if (prompts.length === 0) return;
  const fields = {
    channel: thread.channelId,
    threadTs: thread.threadTs,
    user: event.assistant_thread.user_id,
  };
  ctx.background.run(
    'suggested prompts',
    () => ctx.slack.setSuggestedPrompts(thread.channelId, thread.threadTs, prompts, config.title),
    fields,
  );
}

/** The person looks at another conversation: later runs of the thread get that one. */
export async function assistantThreadContextChanged(
  ctx: BotContext,
  event: AssistantThreadEvent,
  teamId: string,
): Promise<void> {
  const thread = threadOf(event, teamId);
  await ctx.store.threads.setViewing(thread, viewingOf(event, teamId) ?? { channelId: thread.channelId });
}

/**
 * For a question in a pane thread: what the run should know the person looks at (none when they look at
 * nothing but the pane), and the thread's title set from its first question.
 */
export async function paneContextFor(
  ctx: BotContext,
  thread: ThreadRef,
  question: string,
  fields: Record<string, unknown>,
): Promise<Viewing | undefined> {
  const viewing = await ctx.store.threads.viewing(thread);
  if (viewing === null) return undefined;
  if (await ctx.store.threads.claimTitle(thread)) {
    const flat = question.replace(/\s+/g, ' ').trim();
    const title = flat.length > TITLE_CHARS ? `${flat.slice(0, TITLE_CHARS - 1)}…` : flat;
    ctx.background.run(
      'thread title',
      () => ctx.slack.setThreadTitle(thread.channelId, thread.threadTs, title),
      fields,
    );
  }
  return viewing.channelId === thread.channelId ? undefined : viewing;
}
