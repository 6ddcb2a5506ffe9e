/**
 * The Slack Web API calls the bot makes, over Bolt's WebClient, with the answers it reads validated. One
 * small surface so the handlers read as what they do ("tell the clicker", "update the card").
 */
import type { webApi } from '@slack/bolt';
import { z } from 'zod';
import type { KnownBlock, ModalView, SlackMessage } from '../slack/block-kit.js';
import { within } from './background.js';

/** Where an ephemeral note goes: only `user` sees it, in `channel` (and in `threadTs` when given). */
export interface EphemeralTarget {
  channel: string;
  user: string;
  threadTs?: string | undefined;
}

export interface BotSlack {
  ephemeral(to: EphemeralTarget, text: string): Promise<void>;
  /** A link to a message, or undefined when Slack does not answer within `waitMs` (default 1 s). */
  permalink(channel: string, ts: string, waitMs?: number): Promise<string | undefined>;
  updateMessage(channel: string, ts: string, message: SlackMessage): Promise<void>;
  /** Opens a modal; `triggerId` is valid about 3 s after the click. */
  openView(triggerId: string, view: ModalView): Promise<void>;
  publishHome(userId: string, blocks: KnownBlock[]): Promise<void>;
  /** Members of a user group (usergroups.users.list). */
  groupMembers(groupId: string): Promise<string[]>;
  /** Whether `userId` is a member of the conversation (conversations.members, paged). */
  isMember(channel: string, userId: string): Promise<boolean>;
  /** The prompts offered in an agent pane thread (assistant.threads.setSuggestedPrompts; at most 4). */
  setSuggestedPrompts(
    channel: string,
    threadTs: string,
    prompts: readonly { title: string; message: string }[],
    title?: string,
  ): Promise<void>;
  /** The title of an agent pane thread (assistant.threads.setTitle). */
  setThreadTitle(channel: string, threadTs: string, title: string): Promise<void>;
}

const permalinkReply = z.looseObject({ permalink: z.string() });
const membersReply = z.looseObject({ users: z.array(z.string()) });
const conversationMembersReply = z.looseObject({
  members: z.array(z.string()),
  response_metadata: z.looseObject({ next_cursor: z.string().optional() }).optional(),
});
/** Pages of conversations.members read at most (1,000 members each). */
const MEMBER_PAGES = 20;

export function botSlack(client: webApi.WebClient): BotSlack {
  return {
    async ephemeral(to, text) {
      await client.chat.postEphemeral({
        channel: to.channel,
        user: to.user,
        text,
        ...(to.threadTs ? { thread_ts: to.threadTs } : {}),
      });
    },
    async permalink(channel, ts, waitMs = 1_000) {
      const reply = await within(client.chat.getPermalink({ channel, message_ts: ts }), waitMs);
      const parsed = permalinkReply.safeParse(reply);
      return parsed.success ? parsed.data.permalink : undefined;
    },
    async updateMessage(channel, ts, message) {
      await client.chat.update({ channel, ts, text: message.text, blocks: message.blocks });
    },
    async openView(triggerId, view) {
      await client.views.open({ trigger_id: triggerId, view });
    },
    async publishHome(userId, blocks) {
      await client.views.publish({ user_id: userId, view: { type: 'home', blocks } });
    },
    async groupMembers(groupId) {
      return membersReply.parse(await client.usergroups.users.list({ usergroup: groupId })).users;
    },
    async setSuggestedPrompts(channel, threadTs, prompts, title) {
      await client.assistant.threads.setSuggestedPrompts({
        channel_id: channel,
        thread_ts: threadTs,
        prompts: prompts.map((p) => ({ title: p.title, message: p.message })),
        ...(title ? { title } : {}),
      });
    },
    async setThreadTitle(channel, threadTs, title) {
      await client.assistant.threads.setTitle({ channel_id: channel, thread_ts: threadTs, title });
    },
    async isMember(channel, userId) {
      let cursor: string | undefined;
      for (let page = 0; page < MEMBER_PAGES; page++) {
        const reply = conversationMembersReply.parse(
          await client.conversations.members({ channel, limit: 1000, ...(cursor ? { cursor } : {}) }),
        );
        if (reply.members.includes(userId)) return true;
        cursor = reply.response_metadata?.next_cursor;
        if (!cursor) return false;
      }
      return false;
    },
  };
}
