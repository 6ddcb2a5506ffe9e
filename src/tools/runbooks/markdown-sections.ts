/** Headings and sections of a Markdown file (ATX headings, `#` to `######`, outside fenced code). */

interface Heading {
  /** 1-based line number. */
  line: number;
  level: number;
  title: string;
}

export interface LineRange {
  /** 1-based, inclusive. */
  from: number;
  to: number;
}

/** The opening `#`s of an ATX heading; the rest of the line is read by `headingTitle`, not a regex. */
const ATX_OPEN = /^ {0,3}(#{1,6})[ \t]+/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

export function splitLines(text: string): string[] {
  const lines = text.split(/\r?\n/);
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/**
 * The title after the opening `#`s, without an optional closing run of `#`s. A single regex for the whole
 * line backtracks quadratically (and worse) on a long run of spaces, which one bad file would turn into
 * minutes of blocked worker.
 */
function headingTitle(rest: string): string {
  const text = rest.trimEnd();
  let start = text.length;
  while (start > 0 && text[start - 1] === '#') start--;
  const before = text[start - 1];
  const closed = start < text.length && (before === ' ' || before === '\t');
  return (closed ? text.slice(0, start) : text).trim();
}

export function headings(lines: readonly string[]): Heading[] {
  const found: Heading[] = [];
  let fence: string | null = null;
  lines.forEach((text, i) => {
    const fenceMatch = FENCE.exec(text);
    if (fenceMatch?.[1]) {
      const marker = fenceMatch[1];
      if (fence === null) fence = marker;
      else if (marker[0] === fence[0] && marker.length >= fence.length) fence = null;
      return;
    }
    if (fence !== null) return;
    const m = ATX_OPEN.exec(text);
    if (m?.[1]) {
      found.push({ line: i + 1, level: m[1].length, title: headingTitle(text.slice(m[0].length)) });
    }
  });
  return found;
}

/** The lines of `heading`'s section: up to the next heading of the same or a higher level. */
export function sectionRange(all: readonly Heading[], heading: Heading, lineCount: number): LineRange {
  const next = all.find((h) => h.line > heading.line && h.level <= heading.level);
  return { from: heading.line, to: next ? next.line - 1 : lineCount };
}

/** Leaf blocks for search: each heading to the next heading of any level, plus the text before the first. */
export function blocks(all: readonly Heading[], lineCount: number): Array<LineRange & { heading?: Heading }> {
  const result: Array<LineRange & { heading?: Heading }> = [];
  const first = all[0];
  if (!first || first.line > 1) result.push({ from: 1, to: first ? first.line - 1 : lineCount });
  all.forEach((heading, i) => {
    const next = all[i + 1];
    result.push({ heading, from: heading.line, to: next ? next.line - 1 : lineCount });
  });
  return result.filter((b) => b.to >= b.from);
}

/** Finds a heading by its title: exact (case-insensitive) first, then the only one containing it. */
export function findHeading(all: readonly Heading[], wanted: string): Heading | undefined {
  const key = wanted
    .replace(/^#+\s*/, '')
    .trim()
    .toLowerCase();
  const exact = all.find((h) => h.title.toLowerCase() === key);
  if (exact) return exact;
  const partial = all.filter((h) => h.title.toLowerCase().includes(key));
  return partial.length === 1 ? partial[0] : undefined;
}
