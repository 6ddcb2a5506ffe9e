/**
 * Helpers for Slack's mrkdwn: escaping, truncation, mentions and date tokens. Text from a model, a tool
 * or a user is always escaped before it goes into mrkdwn, so `<!channel>` or `<@U123>` inside it is shown
 * as text and pings nobody.
 */

/** Appended where text was cut. Contains none of `&`, `<`, `>`, so it is safe inside escaped mrkdwn. */
export const TRUNCATION_MARKER = '… (truncated)';

/** Escapes the three characters Slack treats as control sequences in mrkdwn and plain `text`. */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * Escapes a stop message (it may quote a model's or a tool's words) but keeps the user mentions loopgate
 * itself writes there (`Cancelled by <@U123>.`): a user mention pings one person, never a channel.
 */
export function escapeKeepingUserMentions(text: string): string {
  return escapeMrkdwn(text).replace(/&lt;@([UW][A-Z0-9]{2,20})&gt;/g, '<@$1>');
}

/** Index at which to cut so that a surrogate pair is never split. */
function safeCut(text: string, at: number): number {
  if (at <= 0) return 0;
  const code = text.charCodeAt(at - 1);
  return code >= 0xd800 && code <= 0xdbff ? at - 1 : at;
}

/** Shortens `text` to at most `max` characters, ending with `marker` when it was cut. */
export function truncate(text: string, max: number, marker: string = TRUNCATION_MARKER): string {
  if (text.length <= max) return text;
  if (max <= marker.length) return text.slice(0, safeCut(text, max));
  return text.slice(0, safeCut(text, max - marker.length)) + marker;
}

/**
 * Escapes `raw` and shortens the escaped result to at most `max` characters without cutting an entity
 * (`&amp;` counts as five characters and is kept whole or dropped).
 */
export function escapeAndTruncate(raw: string, max: number, marker: string = TRUNCATION_MARKER): string {
  const escaped = escapeMrkdwn(raw);
  if (escaped.length <= max) return escaped;
  const budget = Math.max(0, max - marker.length);
  let out = '';
  for (const char of raw) {
    const piece = escapeMrkdwn(char);
    if (out.length + piece.length > budget) break;
    out += piece;
  }
  return max <= marker.length ? out : out + marker;
}

/**
 * Control, format (zero-width, bidi overrides and isolates), line/paragraph separator and lone surrogate
 * characters, except LF and TAB: they could hide text or visually reorder what an approver reads.
 */
const INVISIBLE = /[^\P{Cc}\n\t]|[\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;

/** Shows each invisible or reordering character as its code point, e.g. `⟨U+202E⟩`, `⟨U+000D⟩` for CR. */
export function showInvisible(text: string): string {
  return text.replace(
    INVISIBLE,
    (char) => `⟨U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}⟩`,
  );
}

/** Keeps text from closing a preformatted block early; the zero-width space is invisible. */
export function defuseFences(text: string): string {
  return text.replace(/```/g, '``\u200b`');
}

/** `raw` as an escaped preformatted block of at most `max` characters (fences included), invisibles shown. */
export function preformatted(raw: string, max: number): string {
  return `\`\`\`\n${escapeAndTruncate(defuseFences(showInvisible(raw)), Math.max(0, max - 8))}\n\`\`\``;
}

const USER_ID = /^[UW][A-Z0-9]+$/;
const GROUP_ID = /^S[A-Z0-9]+$/;

/** `<@U…>` for a Slack user id; anything else is shown escaped as plain text. */
export function userMention(id: string): string {
  return USER_ID.test(id) ? `<@${id}>` : escapeMrkdwn(id);
}

/** `<!subteam^S…>` for a Slack user group id; anything else is shown escaped as plain text. */
function groupMention(id: string): string {
  return GROUP_ID.test(id) ? `<!subteam^${id}>` : escapeMrkdwn(id);
}

/** Mention of an id that may be a user or a user group (policy lists mix both). */
export function mention(id: string): string {
  return GROUP_ID.test(id) ? groupMention(id) : userMention(id);
}

/**
 * Slack date token, rendered in each reader's own time zone, e.g. "Tomorrow at 3:04 PM". The fallback
 * (shown by clients that cannot render it) is UTC.
 */
export function slackDate(epochMs: number, format = '{date_short_pretty} at {time}'): string {
  const iso = new Date(epochMs).toISOString();
  const fallback = `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
  return `<!date^${Math.floor(epochMs / 1000)}^${format}|${fallback}>`;
}
