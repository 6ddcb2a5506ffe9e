/**
 * A thread as a person sees it in Slack, as text: the messages in order with their authors, approval
 * cards in a box (with how they first looked when they were edited since), the progress message that
 * was edited in place and deleted at the end (reconstructed from the Web API calls, since Slack no
 * longer shows it), the ephemeral notes and who saw them, and the reactions.
 */
import type { FakeSlack, StoredMessage } from '../../test/fakes/slack-api-server.js';
import { isApprovalCard, isPlaceholderText } from './cards.js';
import { emoji, indent, messageLines, mrkdwnToText, type NameOf } from './slack-text.js';

interface Entry {
  ts: string;
  text: string;
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** The bot's messages of the thread that are gone now, each with the texts it showed in turn. */
function deletedMessages(
  slack: FakeSlack,
  channel: string,
  threadTs: string,
): { ts: string; texts: string[] }[] {
  const visible = new Set(slack.thread(channel, threadTs).map((m) => m.ts));
  const gone = new Map<string, string[]>();
  for (const call of slack.calls) {
    if (call.response?.ok !== true) continue;
    const args = call.args;
    if (call.method === 'chat.postMessage' && args.channel === channel && args.thread_ts === threadTs) {
      const ts = str(call.response.ts);
      if (!visible.has(ts)) gone.set(ts, [str(args.text)]);
    } else if (call.method === 'chat.update' && args.channel === channel) {
      gone.get(str(args.ts))?.push(str(args.text));
    }
  }
  return [...gone].map(([ts, texts]) => ({ ts, texts }));
}

function author(message: StoredMessage, botUserId: string, nameOf: NameOf): string {
  return message.user === botUserId ? 'loopgate  APP' : nameOf(message.user);
}

function reactionLine(message: StoredMessage, nameOf: NameOf): string[] {
  if (message.reactions.length === 0) return [];
  const shown = message.reactions.map((r) => `${emoji(r.name)} ${r.users.map(nameOf).join(', ')}`);
  return [`  ${shown.join('   ')}`];
}

function messageEntry(message: StoredMessage, botUserId: string, nameOf: NameOf): Entry {
  const lines = messageLines(message, nameOf);
  const head = author(message, botUserId, nameOf);
  if (!isApprovalCard(message.blocks)) {
    const edited = message.edited ? ['  (edited)'] : [];
    return {
      ts: message.ts,
      text: [head, indent(lines), ...edited, ...reactionLine(message, nameOf)].join('\n'),
    };
  }
  const box = [`  ┌${'─'.repeat(70)}`, indent(lines, '  │ '), `  └${'─'.repeat(70)}`];
  const first = message.history[0];
  if (first) {
    const before = messageLines(first, nameOf);
    const buttons = before.filter((l) => l.startsWith('[ ')).join(' ');
    box.push(`  (edited in place: it first read "${before[0]?.replace(/^■ /, '')}" with ${buttons})`);
  }
  return { ts: message.ts, text: [head, ...box, ...reactionLine(message, nameOf)].join('\n') };
}

export function renderThread(opts: {
  slack: FakeSlack;
  channel: string;
  threadTs: string;
  nameOf: NameOf;
}): string {
  const { slack, channel, threadTs, nameOf } = opts;
  const entries: Entry[] = slack
    .thread(channel, threadTs)
    .map((m) => messageEntry(m, slack.botUserId, nameOf));
  for (const gone of deletedMessages(slack, channel, threadTs)) {
    const status = gone.texts.every(isPlaceholderText);
    const label = status
      ? '(status message: edited in place while it worked, deleted when the answer came)'
      : '(a message since deleted)';
    const texts = gone.texts.map((t) => mrkdwnToText(t, nameOf));
    entries.push({
      ts: gone.ts,
      text: `loopgate  APP  ${label}\n${indent(texts.map((t, i) => `${i === 0 ? '' : '→ '}${t}`))}`,
    });
  }
  for (const note of slack.ephemerals(channel).filter((e) => e.thread_ts === threadTs)) {
    entries.push({
      ts: note.message_ts,
      text: `loopgate  APP  (only visible to ${nameOf(note.user)})\n${indent(messageLines(note, nameOf))}`,
    });
  }
  entries.sort((a, b) => Number(a.ts) - Number(b.ts));
  return entries.map((e) => e.text).join('\n\n');
}
