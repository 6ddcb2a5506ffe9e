/**
 * What a model's answer may not do in Slack, whether it is posted whole (src/slack/final-answer.ts) or
 * streamed in batches (src/slack/surfaces/stream-writer.ts): page a channel or a group, or show a link
 * under a label that hides where it goes. The answer is otherwise passed through as Markdown.
 *
 * A Slack token is `<` and a non-space character, then anything but `<` and `>`, closed by `>` within
 * `TOKEN_MAX_CHARS`. In a token:
 * - `<!here>`, `<!channel>`, `<!everyone>` (with or without a label) become the plain words `@here`…;
 * - `<!subteam^S…|@label>` becomes `@label` (or `@S…` without one); any other `<!…>` command but a date
 *   becomes `@` and its name;
 * - a link with a label that is not the link itself, `<https://a|text>`, becomes `text (https://a)`;
 * - user mentions `<@U…>` (they ping one person, like a human's message), channel links, dates and bare
 *   links stay.
 * A `<` followed by a non-space character that opens no token (never closed, closed too late, or broken by
 * another `<`) is shown as `＜`, so a `>` arriving later cannot close it into a token.
 *
 * `AnswerNeutraliser` does the same to text arriving in pieces: it releases the longest prefix whose
 * tokens are all decided and holds back the rest (at most `TOKEN_MAX_CHARS + 1` characters), so for any
 * split of a text, the concatenation of what it releases is `neutraliseAnswer(text)` (property-tested).
 */

/** Longest token kept as a token; a `<` left open for longer is shown as `＜`. */
export const TOKEN_MAX_CHARS = 1_000;

/** A `<` and, when it opens a token, the token's inside (group 1). */
const TOKEN = new RegExp(`<(?:([^\\s<>][^<>]{0,${TOKEN_MAX_CHARS - 2}})>)?`, 'g');
/** What follows a `<` whose fate is still open: it may yet become a token. */
const UNDECIDED = new RegExp(`^<(?:[^\\s<>][^<>]{0,${TOKEN_MAX_CHARS - 2}})?$`);

/** Shown instead of a `<` that opens no token. */
const DEFUSED_LT = '＜';

function rewriteToken(inside: string): string {
  const broadcast = /^!(here|channel|everyone)(?:\|.*)?$/is.exec(inside);
  if (broadcast) return `@${broadcast[1]}`;
  const group = /^!subteam\^([^|]*)(?:\|@?(.*))?$/is.exec(inside);
  if (group) return `@${group[2] || group[1]}`;
  if (inside.startsWith('!') && !/^!date\^/i.test(inside)) return `@${inside.slice(1).split('|')[0]}`;
  if (/^[@#]/.test(inside)) return `<${inside}>`;
  const bar = inside.indexOf('|');
  if (bar < 0) return `<${inside}>`;
  const target = inside.slice(0, bar);
  const label = inside.slice(bar + 1);
  return label.trim() === '' || label === target ? `<${target}>` : `${label} (${target})`;
}

/** The answer as Slack may show it: see the module's comment. */
export function neutraliseAnswer(text: string): string {
  return text.replace(TOKEN, (lt: string, inside: string | undefined, at: number) => {
    if (inside !== undefined) return rewriteToken(inside);
    // A `<` before another `<` is defused too: the next one may become text (a rewritten token) that
    // this `<` would then open.
    const next = text[at + 1];
    return next === undefined || /[\s>]/.test(next) ? lt : DEFUSED_LT;
  });
}

/** Neutralises text that arrives in pieces, releasing only what no later piece can change. */
export class AnswerNeutraliser {
  private held = '';

  /** Takes the next piece; returns the neutralised text that is now final (maybe empty). */
  push(piece: string): string {
    const text = this.held + piece;
    const open = text.lastIndexOf('<');
    const cut = open >= 0 && UNDECIDED.test(text.slice(open)) ? open : text.length;
    this.held = text.slice(cut);
    if (cut === text.length) return neutraliseAnswer(text);
    // Released with the held `<` after it, so a `<` just before it is judged as in the whole text; that
    // held `<` comes out as itself (one character), which is dropped.
    return neutraliseAnswer(text.slice(0, cut + 1)).slice(0, -1);
  }

  /** The text is complete: returns the rest, neutralised. */
  end(): string {
    const rest = this.held;
    this.held = '';
    return neutraliseAnswer(rest);
  }
}
