/**
 * Reading the fake Slack as a person would see it: the words of a message (its fallback text and every
 * text in its blocks), the buttons it carries, the approval cards of a thread.
 */
import { ACTION_IDS } from '../../../src/slack/ids.js';
import type { StoredMessage } from '../../fakes/slack-api-server.js';

export interface ButtonOnMessage {
  actionId: string;
  value: string;
  text: string;
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** Every string under a `text` key (or a markdown block's `text`) in blocks, depth first. */
function texts(value: unknown, out: string[]): string[] {
  if (Array.isArray(value)) {
    for (const item of value) texts(item, out);
  } else if (isObject(value)) {
    for (const [key, inner] of Object.entries(value)) {
      if (key === 'text' && typeof inner === 'string') out.push(inner);
      else texts(inner, out);
    }
  }
  return out;
}

/** The message's fallback text and every text of its blocks, one per line. */
export function wordsOf(message: Pick<StoredMessage, 'text' | 'blocks'>): string {
  return [message.text, ...texts(message.blocks ?? [], [])].join('\n');
}

/** The buttons of a message's (or a view's) `actions` blocks. */
export function buttonsOf(blocks: readonly unknown[] | undefined): ButtonOnMessage[] {
  const buttons: ButtonOnMessage[] = [];
  for (const block of blocks ?? []) {
    if (!isObject(block) || block.type !== 'actions' || !Array.isArray(block.elements)) continue;
    for (const element of block.elements) {
      if (!isObject(element) || element.type !== 'button') continue;
      buttons.push({
        actionId: String(element.action_id),
        value: String(element.value ?? ''),
        text: isObject(element.text) ? String(element.text.text) : '',
      });
    }
  }
  return buttons;
}

export function buttonOf(message: StoredMessage, actionId: string): ButtonOnMessage | undefined {
  return buttonsOf(message.blocks).find((b) => b.actionId === actionId);
}

/** An approval card as posted in a thread: where it is and the approval its buttons carry. */
export interface Card {
  channel: string;
  ts: string;
  threadTs: string;
  approvalId: string;
}

/** Approval cards in a thread (messages whose Details button sits next to Approve or once did). */
export function cardsIn(thread: readonly StoredMessage[]): Card[] {
  const cards: Card[] = [];
  for (const message of thread) {
    const versions = [message.blocks, ...message.history.map((h) => h.blocks)];
    const approve = versions
      .flatMap((blocks) => buttonsOf(blocks))
      // A card a break-glass deny rule decided has Break glass instead of Approve.
      .find((b) => b.actionId === ACTION_IDS.approve || b.actionId === ACTION_IDS.breakGlass);
    if (!approve) continue;
    cards.push({
      channel: message.channel,
      ts: message.ts,
      threadTs: message.thread_ts ?? message.ts,
      approvalId: approve.value,
    });
  }
  return cards;
}
