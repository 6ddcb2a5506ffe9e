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

/** A step of ValueFeeder: undefined to go on, else what feedValue returns (a summary, or null). */
type Step = string | null | undefined;

/**
 * Feeds the compact JSON value starting at `start` as JSON.stringify(value, null, 2) would print it:
 * the same text with whitespace after `{`, `[`, `,` and `:` and before `}`, `]` of non-empty
 * containers (one space each here: the flattener collapses runs anyway), and string literals as they
 * are (escapes stay escaped). Null when malformed.
 */
function feedValue(content: string, start: number, out: Flattener): string | null {
  return new ValueFeeder(content, start, out).run();
}

/** feedValue's scan, one method per kind of token. */
class ValueFeeder {
  private depth = 0;

  constructor(
    private readonly content: string,
    private i: number,
    private readonly out: Flattener,
  ) {}

  run(): string | null {
    while (this.i < this.content.length) {
      const step = this.token(this.content[this.i]!);
      if (step !== undefined) return step;
    }
    return null;
  }

  private token(char: string): Step {
    if (char === '"') return this.stringLiteral();
    if (char === '{' || char === '[') return this.open(char);
    if (char === '}' || char === ']') return this.close(char);
    if (char === ',' || char === ':') return this.separator(char);
    return this.valueRun();
  }

  /** Text for the flattener; the summary to stop with when nothing more can change it. */
  private emit(text: string): Step {
    return this.out.text(text) ? undefined : this.out.summary();
  }

  /** A string literal: its runs as they are, its whitespace collapsed, escapes as two characters. */
  private stringLiteral(): Step {
    const opened = this.emit('"');
    if (opened !== undefined) return opened;
    this.i++;
    const body = this.stringBody();
    if (body !== undefined) return body;
    const closed = this.emit('"');
    if (closed !== undefined) return closed;
    this.i++;
    return this.depth === 0 ? this.out.summary() : undefined;
  }

  /** A literal's body, up to (not past) its closing quote; \uXXXX goes on as a run. */
  private stringBody(): Step {
    const { content } = this;
    for (;;) {
      const run = runEnd(STRING_RUN, content, this.i);
      if (run > this.i) {
        const step = this.emit(content.slice(this.i, run));
        if (step !== undefined) return step;
        this.i = run;
      }
      const space = runEnd(WHITESPACE, content, this.i);
      if (space > this.i) {
        this.out.space();
        this.i = space;
        continue;
      }
      if (this.i >= content.length) return null;
      if (content[this.i] === '"') return undefined;
      const step = this.emit(content.slice(this.i, this.i + 2));
      if (step !== undefined) return step;
      this.i += 2;
    }
  }

  private open(char: string): Step {
    this.depth++;
    const step = this.emit(char);
    if (step !== undefined) return step;
    const next = this.content[this.i + 1];
    if (next !== '}' && next !== ']') this.out.space();
    this.i++;
    return undefined;
  }

  private close(char: string): Step {
    // At depth 0 this closes the result around `data`: a number, true, false or null has ended.
    if (this.depth === 0) return this.out.summary();
    this.depth--;
    const previous = this.content[this.i - 1];
    if (previous !== '{' && previous !== '[') this.out.space();
    const step = this.emit(char);
    if (step !== undefined) return step;
    this.i++;
    return this.depth === 0 ? this.out.summary() : undefined;
  }

  private separator(char: string): Step {
    // A comma at depth 0 ends `data` (a verification may follow it).
    if (char === ',' && this.depth === 0) return this.out.summary();
    const step = this.emit(char);
    if (step !== undefined) return step;
    this.out.space();
    this.i++;
    return undefined;
  }

  /** A number, true, false or null, or a part of one. */
  private valueRun(): Step {
    const run = runEnd(VALUE_RUN, this.content, this.i);
    if (run === this.i) return null;
    const step = this.emit(this.content.slice(this.i, run));
    if (step !== undefined) return step;
    this.i = run;
    return undefined;
  }
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
