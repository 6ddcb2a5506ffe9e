/**
 * The summary of a successful result, read off its `tool` message text. Evidence of a read keeps the
 * first 300 characters of the result it saw, which the tool message right beside it already holds; the
 * store keeps such a summary as a pointer to that message instead (evidence-codec.ts), but only after
 * checking, when it writes, that this function gives back exactly the summary it replaces. So the
 * engine may summarise however it likes: whatever this function does not reproduce is stored in full.
 *
 * What it computes, without parsing the message: for the text `{"ok":true,"data":<data>...}` that
 * JSON.stringify makes of a successful result, the text of `data` (a string as it is, anything else
 * as JSON indented by 2), whitespace runs collapsed to one space, trimmed, and cut to 300 characters
 * (299 and '…' when longer). Part of the stored layout: changing what it returns changes what stored
 * evidence reads back as, so it needs a new STORE_LAYOUT.
 */

const MAX_CHARS = 300;
const RESULT_PREFIX = '{"ok":true,"data":';

/**
 * Collapses whitespace runs as `.replace(/\s+/g, ' ').trim()` would, and notices when the text is too
 * long, or (given the summary it is checked against) when it can no longer be that summary.
 */
class Flattener {
  private out = '';
  private pendingSpace = false;
  /** Set once the text differs from `expected`. */
  diverged = false;

  constructor(private readonly expected: string | undefined) {}

  /** Whitespace: one space before the next text, unless nothing came yet. */
  space(): void {
    if (this.out.length > 0) this.pendingSpace = true;
  }

  /** Appends text without whitespace; false when nothing more can change the outcome. */
  text(text: string): boolean {
    const from = this.out.length;
    if (this.pendingSpace) {
      this.out += ' ';
      this.pendingSpace = false;
    }
    this.out += text;
    if (this.expected !== undefined) {
      // Only the first MAX_CHARS - 1 characters survive a cut; the rest is compared by the caller.
      const upTo = Math.min(this.out.length, MAX_CHARS - 1);
      if (upTo > from && this.expected.slice(from, upTo) !== this.out.slice(from, upTo)) {
        this.diverged = true;
        return false;
      }
    }
    return this.out.length <= MAX_CHARS;
  }

  summary(): string | null {
    if (this.diverged) return null;
    return this.out.length <= MAX_CHARS ? this.out : `${this.out.slice(0, MAX_CHARS - 1)}…`;
  }
}

// Runs are matched with sticky expressions, so long stretches cost one native scan each.
const WHITESPACE = /\s+/y;
/** Inside a string literal: anything but its end, an escape or whitespace. */
const STRING_RUN = /[^"\\\s]+/y;
/** Outside strings: a number, true, false or null (compact JSON has no whitespace there). */
const VALUE_RUN = /[^"\\{}[\],:\s]+/y;
const ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};

/** The end of the run `pattern` matches at `at` (`at` itself when none). */
function runEnd(pattern: RegExp, content: string, at: number): number {
  pattern.lastIndex = at;
  return pattern.test(content) ? pattern.lastIndex : at;
}

/** Feeds the string literal starting at `start` (its opening quote), unescaped. Null when malformed. */
function feedString(content: string, start: number, out: Flattener): string | null {
  let i = start + 1;
  while (i < content.length) {
    const run = runEnd(STRING_RUN, content, i);
    if (run > i) {
      if (!out.text(content.slice(i, run))) return out.summary();
      i = run;
      continue;
    }
    const space = runEnd(WHITESPACE, content, i);
    if (space > i) {
      out.space();
      i = space;
      continue;
    }
    if (content[i] === '"') return out.summary();
    // An escape.
    let char: string | undefined;
    if (content[i + 1] === 'u') {
      const hex = content.slice(i + 2, i + 6);
      if (/^[0-9a-fA-F]{4}$/.test(hex)) char = String.fromCharCode(Number.parseInt(hex, 16));
      i += 6;
    } else {
      char = ESCAPES[content[i + 1] ?? ''];
      i += 2;
    }
    if (char === undefined) return null;
    if (/^\s$/.test(char)) out.space();
    else if (!out.text(char)) return out.summary();
  }
  return null;
}

/**
 * Feeds the compact JSON value starting at `start` as JSON.stringify(value, null, 2) would print it:
 * the same text with whitespace after `{`, `[`, `,` and `:` and before `}`, `]` of non-empty
 * containers (one space each here: the flattener collapses runs anyway), and string literals as they
 * are (escapes stay escaped). Null when malformed.
 */
function feedValue(content: string, start: number, out: Flattener): string | null {
  let depth = 0;
  let i = start;
  while (i < content.length) {
    const char = content[i]!;
    if (char === '"') {
      // A string literal: its runs as they are, its whitespace collapsed, escapes as two characters
      // (\uXXXX goes on as a run).
      if (!out.text('"')) return out.summary();
      i++;
      for (;;) {
        const run = runEnd(STRING_RUN, content, i);
        if (run > i) {
          if (!out.text(content.slice(i, run))) return out.summary();
          i = run;
        }
        const space = runEnd(WHITESPACE, content, i);
        if (space > i) {
          out.space();
          i = space;
          continue;
        }
        if (i >= content.length) return null;
        if (content[i] === '"') break;
        if (!out.text(content.slice(i, i + 2))) return out.summary();
        i += 2;
      }
      if (!out.text('"')) return out.summary();
      i++;
      if (depth === 0) return out.summary();
      continue;
    }
    if (char === '{' || char === '[') {
      depth++;
      if (!out.text(char)) return out.summary();
      const next = content[i + 1];
      if (next !== '}' && next !== ']') out.space();
      i++;
      continue;
    }
    if (char === '}' || char === ']') {
      // At depth 0 this closes the result around `data`: a number, true, false or null has ended.
      if (depth === 0) return out.summary();
      depth--;
      const previous = content[i - 1];
      if (previous !== '{' && previous !== '[') out.space();
      if (!out.text(char)) return out.summary();
      i++;
      if (depth === 0) return out.summary();
      continue;
    }
    if (char === ',' || char === ':') {
      if (char === ',' && depth === 0) return out.summary();
      if (!out.text(char)) return out.summary();
      out.space();
      i++;
      continue;
    }
    const run = runEnd(VALUE_RUN, content, i);
    if (run === i) return null;
    if (!out.text(content.slice(i, run))) return out.summary();
    i = run;
  }
  return null;
}

/**
 * The summary of the successful result whose tool message text is `content`; null when it is not one.
 * With `expected`, null as soon as the summary cannot be `expected` (a cheap check for a writer).
 */
export function summaryFromContent(content: string, expected?: string): string | null {
  if (!content.startsWith(RESULT_PREFIX)) return null;
  const start = RESULT_PREFIX.length;
  const out = new Flattener(expected);
  return content[start] === '"' ? feedString(content, start, out) : feedValue(content, start, out);
}
