/**
 * Renders a tool call's arguments for a person to check before approving: one `key: value` line per key
 * inside a preformatted block (so `*`, `_` and backticks in values show as typed), escaped, and sized to a
 * budget by shortening only the longest values. Invisible and reordering characters (CR, U+2028, bidi
 * overrides, zero-width) are shown as their code points, so what the approver reads is what runs.
 */
import { defuseFences, escapeAndTruncate, escapeMrkdwn, showInvisible } from './mrkdwn.js';

interface RenderedArguments {
  /** mrkdwn, at most the requested number of characters. */
  text: string;
  /** True when a value or key was shortened or left out. */
  truncated: boolean;
}

/** Values are never cut below this many characters; keys that do not fit are left out instead. */
const MIN_VALUE_CHARS = 24;
const MAX_KEY_CHARS = 80;
const FENCE_OPEN = '```\n';
const FENCE_CLOSE = '\n```';

function rawValue(value: unknown): string {
  if (typeof value === 'string') {
    // A multi-line string reads best as an indented block under its key.
    return value.includes('\n') ? `\n  ${value.split('\n').join('\n  ')}` : value;
  }
  if (value === undefined) return 'undefined';
  return JSON.stringify(value) ?? String(value);
}

function entriesOf(args: unknown): [string | null, string][] {
  if (args !== null && typeof args === 'object' && !Array.isArray(args)) {
    return Object.entries(args).map(([k, v]) => [showInvisible(k), defuseFences(showInvisible(rawValue(v)))]);
  }
  return [[null, defuseFences(showInvisible(rawValue(args)))]];
}

/**
 * Every argument, escaped and never shortened, as the lines of a preformatted block (without its fences):
 * what the Full text modal shows.
 */
export function argumentsInFull(args: unknown): string {
  const entries = entriesOf(args);
  if (entries.length === 0) return '(no arguments)';
  return entries
    .map(([key, value]) => {
      const label = key === null ? '' : `${escapeMrkdwn(key)}:${value.startsWith('\n') ? '' : ' '}`;
      return `${label}${escapeMrkdwn(value)}`;
    })
    .join('\n');
}

/**
 * Largest per-value cap such that every value cut to it fits in `budget` (values shorter than the cap
 * keep all of their text).
 */
function fairShare(lengths: readonly number[], budget: number): number {
  const sorted = [...lengths].sort((a, b) => a - b);
  let remaining = budget;
  for (let i = 0; i < sorted.length; i++) {
    const share = Math.floor(remaining / (sorted.length - i));
    const length = sorted[i] ?? 0;
    if (length > share) return share;
    remaining -= length;
  }
  return Number.POSITIVE_INFINITY;
}

interface Layout {
  keys: string[];
  values: string[];
  tail: string;
  /** Longest escaped value kept whole; longer ones are cut to it. */
  cap: number;
}

/** Shows as many keys as fit with at least MIN_VALUE_CHARS per value (always at least one key). */
function layout(entries: readonly [string | null, string][], maxChars: number): Layout {
  for (let shown = entries.length; ; shown--) {
    const omitted = entries.length - shown;
    const tail = omitted > 0 ? `\n… and ${omitted} more argument${omitted === 1 ? '' : 's'}` : '';
    const keys = entries
      .slice(0, shown)
      .map(([key]) => (key === null ? '' : `${escapeAndTruncate(key, MAX_KEY_CHARS, '…')}: `));
    const values = entries.slice(0, shown).map(([, value]) => value);
    const fixed = FENCE_OPEN.length + FENCE_CLOSE.length + tail.length + (shown - 1) + keys.join('').length;
    const cap = fairShare(
      values.map((v) => escapeMrkdwn(v).length),
      maxChars - fixed,
    );
    if (cap >= MIN_VALUE_CHARS || shown === 1) return { keys, values, tail, cap };
  }
}

/**
 * Renders `args` in at most `maxChars` characters of mrkdwn (`maxChars` >= 200, so one key and a useful
 * part of its value always fit).
 */
export function renderArguments(args: unknown, maxChars: number): RenderedArguments {
  if (maxChars < 200) throw new RangeError('maxChars must be at least 200');
  const entries = entriesOf(args);
  if (entries.length === 0) return { text: '_no arguments_', truncated: false };

  const { keys, values, tail, cap } = layout(entries, maxChars);
  // A multi-line value starts on the line after its key.
  const lines = values.map((v, i) => {
    const key = keys[i] ?? '';
    return `${v.startsWith('\n') ? key.trimEnd() : key}${escapeAndTruncate(v, cap)}`;
  });
  return {
    text: `${FENCE_OPEN}${lines.join('\n')}${tail}${FENCE_CLOSE}`,
    truncated:
      values.length < entries.length ||
      entries.some(([key]) => key !== null && escapeMrkdwn(key).length > MAX_KEY_CHARS) ||
      values.some((v) => escapeMrkdwn(v).length > cap),
  };
}
