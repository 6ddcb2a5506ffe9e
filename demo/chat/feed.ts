/**
 * Follows what the bot does in the stand-in Slack, call by call, and shows it as it happens: the
 * progress message as status lines (each edit a line), other messages in full, approval cards in a box
 * (and their decision once redrawn), ephemeral notes with whom they are for, and reactions. Cards and
 * opened modals are also handed to the session, which asks for decisions.
 */
import type { FakeSlack, RecordedCall, StoredView } from '../../test/fakes/slack-api-server.js';
import { isApprovalCard, isPlaceholderText, pendingApprovalId } from '../lib/cards.js';
import { emoji, indent, messageLines, mrkdwnToText, type NameOf } from '../lib/slack-text.js';

export interface PostedCard {
  ts: string;
  threadTs: string;
  approvalId: string;
}

export interface FeedHandlers {
  print(text: string): void;
  onCard(card: PostedCard): void;
  onModal(view: StoredView): void;
  nameOf: NameOf;
}

const str = (value: unknown): string => (typeof value === 'string' ? value : '');
const arr = (value: unknown): unknown[] | undefined => (Array.isArray(value) ? value : undefined);

function box(lines: readonly string[]): string {
  return [`  ┌${'─'.repeat(70)}`, indent(lines, '  │ '), `  └${'─'.repeat(70)}`].join('\n');
}

/** The lines of a redrawn card that say what was decided: its header and the text after "Asked by". */
function decisionLines(lines: readonly string[]): string[] {
  const asked = lines.findIndex((l) => l.startsWith('· Asked by'));
  const decision = asked === -1 ? [] : lines.slice(asked + 1).filter((l) => !l.startsWith('[ '));
  return [lines[0] ?? '', ...decision];
}

export interface Feed {
  /** Shows the calls not shown yet, now. */
  flush(): void;
  stop(): void;
}

/** Starts following `slack`. */
export function followSlack(slack: FakeSlack, on: FeedHandlers, intervalMs = 100): Feed {
  const placeholders = new Set<string>();
  let seen = 0;

  const show = (call: RecordedCall) => {
    const args = call.args;
    const response = call.response ?? {};
    const blocks = arr(args.blocks);
    switch (call.method) {
      case 'chat.postMessage': {
        const ts = str(response.ts);
        if (isPlaceholderText(args.text)) {
          placeholders.add(ts);
          on.print(`loopgate  ${mrkdwnToText(str(args.text), on.nameOf)}`);
          return;
        }
        const lines = messageLines({ text: str(args.text), ...(blocks ? { blocks } : {}) }, on.nameOf);
        const approvalId = pendingApprovalId(blocks);
        if (approvalId) {
          on.print(`loopgate  (approval card)\n${box(lines)}`);
          on.onCard({ ts, threadTs: str(args.thread_ts) || ts, approvalId });
          return;
        }
        on.print(`loopgate\n${indent(lines)}`);
        return;
      }
      case 'chat.update': {
        if (placeholders.has(str(args.ts))) {
          on.print(`loopgate  ${mrkdwnToText(str(args.text), on.nameOf)}`);
        } else if (isApprovalCard(blocks)) {
          const lines = messageLines({ text: str(args.text), ...(blocks ? { blocks } : {}) }, on.nameOf);
          on.print(`loopgate  (card updated)\n${indent(decisionLines(lines), '  │ ')}`);
        }
        return;
      }
      case 'chat.postEphemeral':
        on.print(
          `loopgate  (only visible to ${on.nameOf(str(args.user))})\n${indent(
            messageLines({ text: str(args.text) }, on.nameOf),
          )}`,
        );
        return;
      case 'reactions.add':
        on.print(`loopgate  reacted ${emoji(str(args.name))}`);
        return;
      case 'views.open': {
        const id = str((response.view as { id?: unknown } | undefined)?.id);
        const view = slack.views.get(id);
        if (view) on.onModal(view);
        return;
      }
    }
  };

  const flush = () => {
    while (seen < slack.calls.length) {
      const call = slack.calls[seen++];
      if (call?.response?.ok === true) show(call);
    }
  };
  const timer = setInterval(flush, intervalMs);
  return { flush, stop: () => clearInterval(timer) };
}
