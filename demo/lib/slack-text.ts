/**
 * Slack messages as a terminal shows them: mrkdwn with mentions, dates, links, entities and the emoji
 * loopgate uses turned into plain text, and Block Kit blocks as lines (header, sections, context,
 * Markdown, buttons).
 */
import { z } from 'zod';

/** The display name of a Slack user id (`manager` for `U0MGR`). */
export type NameOf = (userId: string) => string;

const EMOJI: Readonly<Record<string, string>> = {
  white_check_mark: '✅',
  no_entry_sign: '🚫',
  hourglass_flowing_sand: '⏳',
  hourglass: '⌛',
  warning: '⚠️',
  heavy_multiplication_x: '✖️',
  eyes: '👀',
  x: '❌',
  raised_hand: '✋',
};

export function emoji(name: string): string {
  return EMOJI[name] ?? `:${name}:`;
}

export function mrkdwnToText(mrkdwn: string, nameOf: NameOf): string {
  return mrkdwn
    .replace(/<!date\^\d+\^[^|>]*\|([^>]*)>/g, '$1')
    .replace(/<@([UW][A-Z0-9]+)(?:\|[^>]*)?>/g, (_m, id: string) => `@${nameOf(id)}`)
    .replace(
      /<!subteam\^([A-Z0-9]+)(?:\|@?([^>]*))?>/g,
      (_m, id: string, label?: string) => `@${label || id}`,
    )
    .replace(/<!(here|channel|everyone)>/g, '@$1')
    .replace(/<#([CGD][A-Z0-9]+)(?:\|([^>]*))?>/g, (_m, id: string, label?: string) => `#${label || id}`)
    .replace(/<(https?:[^|>]+)\|([^>]+)>/g, '$2 ($1)')
    .replace(/<(https?:[^>]+)>/g, '$1')
    .replace(/:([a-z_]+):/g, (whole, name: string) => EMOJI[name] ?? whole)
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

const textObject = z.looseObject({ text: z.string() });
const button = z.looseObject({ text: textObject.optional() });
const element = z.looseObject({
  type: z.string(),
  text: z.union([z.string(), textObject]).optional(),
  /** feedback_buttons (context_actions): the 👍 / 👎 pair. */
  positive_button: button.optional(),
  negative_button: button.optional(),
});
const block = z.looseObject({
  type: z.string(),
  text: z.union([z.string(), textObject]).optional(),
  fields: z.array(textObject).optional(),
  elements: z.array(element).optional(),
  label: textObject.optional(),
});

const textOf = (value: string | { text: string } | undefined): string =>
  typeof value === 'string' ? value : (value?.text ?? '');

function blockLines(raw: unknown, nameOf: NameOf): string[] {
  const parsed = block.safeParse(raw);
  if (!parsed.success) return ['(unreadable block)'];
  const b = parsed.data;
  const text = (s: string) => mrkdwnToText(s, nameOf).split('\n');
  switch (b.type) {
    case 'header':
      return [`■ ${mrkdwnToText(textOf(b.text), nameOf)}`];
    case 'section':
      return [...text(textOf(b.text)), ...(b.fields ?? []).flatMap((f) => text(f.text))];
    case 'markdown':
      return text(textOf(b.text));
    case 'context':
      return [`· ${(b.elements ?? []).map((e) => mrkdwnToText(textOf(e.text), nameOf)).join(' ')}`];
    case 'actions':
      return [
        (b.elements ?? [])
          .map((e) => (e.type === 'button' ? `[ ${textOf(e.text)} ]` : `(${e.type})`))
          .join(' '),
      ];
    case 'context_actions':
      // Feedback and icon buttons, drawn as the buttons Slack shows.
      return [
        (b.elements ?? [])
          .map((e) =>
            e.type === 'feedback_buttons'
              ? `[ ${textOf(e.positive_button?.text) || '👍'} ] [ ${textOf(e.negative_button?.text) || '👎'} ]`
              : `[ ${textOf(e.text) || e.type} ]`,
          )
          .join(' '),
      ];
    case 'divider':
      return ['────────'];
    case 'input':
      return [`${textOf(b.label)}: ____________`];
    default:
      return [`(${b.type} block)`];
  }
}

/** A message's lines: its blocks when it has any, else its text. */
export function messageLines(message: { text: string; blocks?: unknown[] }, nameOf: NameOf): string[] {
  if (message.blocks && message.blocks.length > 0) {
    return message.blocks.flatMap((b) => blockLines(b, nameOf));
  }
  return mrkdwnToText(message.text, nameOf).split('\n');
}

/** Prefixes every line (`│ ` for a card, two spaces for a message). */
export function indent(lines: readonly string[], prefix = '  '): string {
  return lines.map((line) => `${prefix}${line}`.trimEnd()).join('\n');
}
