/**
 * The Slack Web API calls the bot makes, over Bolt's WebClient, with the answers it reads validated. One
 * small surface so the handlers read as what they do ("tell the clicker", "update the card").
 *
 * With the installation's shared rate budget (src/slack/rate), what a person waits for after a click
 * (card updates, ephemeral replies, modals) goes first in line; the agent pane's prompts and title are
 * decorations.
 */
import type { webApi } from '@slack/bolt';
import { z } from 'zod';
import type { KnownBlock, ModalView, SlackMessage } from '../slack/block-kit.js';
import type { BudgetedCall, SlackBudget } from '../slack/rate/slack-budget.js';
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
  /** Posts a message (chat.postMessage), in `threadTs`'s thread when given. */
  postMessage(channel: string, text: string, threadTs?: string): Promise<void>;
  /** Opens a modal; `triggerId` is valid about 3 s after the click. */
  openView(triggerId: string, view: ModalView): Promise<void>;
  publishHome(userId: string, blocks: KnownBlock[]): Promise<void>;
  /** Members of a user group (usergroups.users.list). */
  groupMembers(groupId: string): Promise<string[]>;
  /** users.lookupByEmail (the raw reply; src/approvers/oncall/slack-email.ts reads it). */
  lookupByEmail(email: string): Promise<unknown>;
  /** conversations.info (the raw reply; src/slack/channel-facts.ts reads it). */
  channelInfo(channel: string): Promise<unknown>;
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

export function botSlack(client: webApi.WebClient, budget?: SlackBudget): BotSlack {
  const first = <T>(spec: Omit<BudgetedCall, 'priority'>, call: () => Promise<T>) =>
    budget ? budget.call({ ...spec, priority: 'card' }, call) : call();
  const decorate = async (
    spec: Omit<BudgetedCall, 'priority'>,
    key: string,
    call: () => Promise<unknown>,
  ) => {
    if (budget) await budget.decorate({ ...spec, key }, call);
    else await call();
  };
  return {
    async ephemeral(to, text) {
      await first({ method: 'chat.postEphemeral' }, () =>
        client.chat.postEphemeral({
          channel: to.channel,
          user: to.user,
          text,
          ...(to.threadTs ? { thread_ts: to.threadTs } : {}),
        }),
      );
    },
    async permalink(channel, ts, waitMs = 1_000) {
      const reply = await within(
        first({ method: 'chat.getPermalink' }, () => client.chat.getPermalink({ channel, message_ts: ts })),
        waitMs,
      );
      const parsed = permalinkReply.safeParse(reply);
      return parsed.success ? parsed.data.permalink : undefined;
    },
    async updateMessage(channel, ts, message) {
      await first({ method: 'chat.update' }, () =>
        client.chat.update({ channel, ts, text: message.text, blocks: message.blocks }),
      );
    },
    async postMessage(channel, text, threadTs) {
      await first({ method: 'chat.postMessage', channel }, () =>
        client.chat.postMessage({ channel, text, ...(threadTs ? { thread_ts: threadTs } : {}) }),
      );
    },
    async openView(triggerId, view) {
      await first({ method: 'views.open' }, () => client.views.open({ trigger_id: triggerId, view }));
    },
    async publishHome(userId, blocks) {
      await first({ method: 'views.publish' }, () =>
        client.views.publish({ user_id: userId, view: { type: 'home', blocks } }),
      );
    },
    async groupMembers(groupId) {
      // A click waits on it: in line with the cards.
      return membersReply.parse(
        await first({ method: 'usergroups.users.list' }, () =>
          client.usergroups.users.list({ usergroup: groupId }),
        ),
      ).users;
    },
    channelInfo(channel) {
      // A click waits on it (per-channel permissions): in line with the cards.
      return first({ method: 'conversations.info' }, () => client.conversations.info({ channel }));
    },
    lookupByEmail(email) {
      // A click may wait on it (an on-call cache miss): in line with the cards.
      return first({ method: 'users.lookupByEmail' }, () => client.users.lookupByEmail({ email }));
    },
    async setSuggestedPrompts(channel, threadTs, prompts, title) {
      await decorate(
        { method: 'assistant.threads.setSuggestedPrompts' },
        `${channel} ${threadTs} prompts`,
        () =>
          client.assistant.threads.setSuggestedPrompts({
            channel_id: channel,
            thread_ts: threadTs,
            prompts: prompts.map((p) => ({ title: p.title, message: p.message })),
            ...(title ? { title } : {}),
          }),
      );
    },
    async setThreadTitle(channel, threadTs, title) {
      await decorate({ method: 'assistant.threads.setTitle' }, `${channel} ${threadTs} title`, () =>
        client.assistant.threads.setTitle({ channel_id: channel, thread_ts: threadTs, title }),
      );
    },
    async isMember(channel, userId) {
      let cursor: string | undefined;
      for (let page = 0; page < MEMBER_PAGES; page++) {
        const reply = conversationMembersReply.parse(
          await first({ method: 'conversations.members' }, () =>
            client.conversations.members({ channel, limit: 1000, ...(cursor ? { cursor } : {}) }),
          ),
        );
        if (reply.members.includes(userId)) return true;
        cursor = reply.response_metadata?.next_cursor;
        if (!cursor) return false;
      }
      return false;
    },
  };
}
