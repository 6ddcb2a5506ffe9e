/**
 * Which Slack message events ask loopgate something, decided from the event alone:
 * - `app_mention` in a conversation other than a DM: a question (kind `mention`), in a thread or not;
 * - `message` in a DM (`channel_type: im`): a question (kind `dm`);
 * - `message` replying in a thread without mentioning the bot: a follow-up (kind `thread_reply`), taken
 *   only when loopgate works in that thread (checked by the caller against its thread memory).
 * A reply that mentions the bot arrives both as `app_mention` and as `message`: only the mention is
 * taken, so one Slack message never starts two runs. Ignored: the bot's own messages, other bots,
 * edits, deletions and other message subtypes, and channel messages outside threads without a mention.
 */
import type { MessageEvent } from './slack-payloads.js';

type MessageKind = 'mention' | 'dm' | 'thread_reply';

export type Inbound =
  | {
      take: true;
      kind: MessageKind;
      channelId: string;
      userId: string;
      ts: string;
      /** The thread to answer in: the event's thread, or the message itself when it starts one. */
      threadTs: string;
      /** True when the message was written in an existing thread. */
      inThread: boolean;
      /** The message with mentions of the bot removed, trimmed. */
      text: string;
    }
  | { take: false; reason: string };

/** Subtypes written by people that still carry a question (a reply also sent to the channel, a file). */
const HUMAN_SUBTYPES: ReadonlySet<string> = new Set(['thread_broadcast', 'file_share']);

const ignore = (reason: string): Inbound => ({ take: false, reason });

function mentionsBot(text: string, botUserId: string): boolean {
  return text.includes(`<@${botUserId}>`) || text.includes(`<@${botUserId}|`);
}

/** Removes `<@BOT>` and `<@BOT|name>` and collapses the whitespace left behind. */
export function stripBotMention(text: string, botUserId: string): string {
  return text
    .split(`<@${botUserId}>`)
    .join(' ')
    .replace(new RegExp(`<@${escapeRegExp(botUserId)}\\|[^>]*>`, 'g'), ' ')
    .replace(/[ \t]+/g, ' ')
    .trim();
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function classifyMessage(event: MessageEvent, botUserId: string): Inbound {
  if (event.bot_id !== undefined) return ignore('written by a bot');
  if (event.subtype !== undefined && !HUMAN_SUBTYPES.has(event.subtype))
    return ignore(`subtype ${event.subtype}`);
  if (event.edited !== undefined) return ignore('an edit');
  if (!event.user) return ignore('no author');
  if (event.user === botUserId) return ignore('written by loopgate');

  const text = event.text ?? '';
  const inThread = event.thread_ts !== undefined && event.thread_ts !== event.ts;
  const take = (kind: MessageKind): Inbound => ({
    take: true,
    kind,
    channelId: event.channel,
    userId: event.user ?? '',
    ts: event.ts,
    threadTs: event.thread_ts ?? event.ts,
    inThread,
    text: stripBotMention(text, botUserId),
  });

  if (event.type === 'app_mention') {
    // In a DM the same message also arrives as message.im, which is what DMs are handled by.
    return event.channel.startsWith('D') ? ignore('mention in a DM') : take('mention');
  }
  if (event.channel_type === 'im') return take('dm');
  if (!inThread) return ignore('channel message outside a thread');
  if (mentionsBot(text, botUserId)) return ignore('mentions loopgate: handled as app_mention');
  return take('thread_reply');
}
