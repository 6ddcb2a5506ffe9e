/**
 * Splits long Markdown (or mrkdwn) into pieces that fit one of Slack's limits: at paragraph boundaries
 * when it can, else at line boundaries, else inside a line at a space. A code fence that has to be split
 * is closed at the end of one piece and reopened (with its info string) at the start of the next, so each
 * piece renders on its own.
 */
import { SLACK_LIMITS } from './limits.js';

interface Fence {
  /** The opening line, reused to reopen the fence in the next piece. */
  open: string;
  char: '`' | '~';
  length: number;
}

const FENCE_LINE = /^ {0,3}(`{3,}|~{3,})(.*)$/;
/** Longest opening line carried over to a following piece. */
const MAX_REOPEN = 100;

function fenceAfter(line: string, current: Fence | null): Fence | null {
  const match = FENCE_LINE.exec(line);
  if (!match) return current;
  const marker = match[1] ?? '';
  const rest = match[2] ?? '';
  const char = marker[0] === '~' ? '~' : '`';
  if (current === null) {
    // A backtick fence's info string may not contain backticks (CommonMark); such a line is not a fence.
    if (char === '`' && rest.includes('`')) return null;
    return { open: line.trimStart().slice(0, MAX_REOPEN), char, length: marker.length };
  }
  const closes = char === current.char && marker.length >= current.length && rest.trim() === '';
  return closes ? null : current;
}

function closingLine(fence: Fence): string {
  return fence.char.repeat(fence.length);
}

/** Breaks lines longer than `max` at the last space before the limit, or hard at the limit. */
function breakLongLines(lines: readonly string[], max: number): string[] {
  const out: string[] = [];
  for (let line of lines) {
    while (line.length > max) {
      let cut = line.lastIndexOf(' ', max);
      if (cut < max / 2) cut = max;
      const code = line.charCodeAt(cut - 1);
      if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
      out.push(line.slice(0, cut));
      line = line.slice(cut).replace(/^ /, '');
    }
    out.push(line);
  }
  return out;
}

/** fences[i] is the fence open after line i (null when outside any fence). */
function fencesAfterLines(lines: readonly string[]): (Fence | null)[] {
  const fences: (Fence | null)[] = [];
  let open: Fence | null = null;
  for (const line of lines) {
    open = fenceAfter(line, open);
    fences.push(open);
  }
  return fences;
}

/** The lines of a text with the fence open after each, as the piece-cutting helpers read them. */
interface Layout {
  lines: readonly string[];
  fences: readonly (Fence | null)[];
}

/**
 * Greedy: the furthest line `end` such that head + lines[start..end] (+ a closing fence) fits in `max`,
 * and the last paragraph end (the line before a blank one outside a fence) at or before it.
 */
function furthestFit(
  { lines, fences }: Layout,
  start: number,
  headSize: number,
  max: number,
): { end: number; lastParagraphEnd: number } {
  let size = headSize;
  let end = start - 1;
  let lastParagraphEnd = -1;
  for (let i = start; i < lines.length; i++) {
    const fence = fences[i] ?? null;
    const closing = fence ? closingLine(fence).length + 1 : 0;
    const added = (lines[i] ?? '').length + 1;
    if (size + added + closing - 1 > max) break;
    size += added;
    end = i;
    if ((lines[i] ?? '').trim() === '' && fence === null && i > start) lastParagraphEnd = i - 1;
  }
  return { end, lastParagraphEnd };
}

/** Where the piece starting at `start` ends (the index of its last line). */
function cutPoint(layout: Layout, start: number, headSize: number, max: number): number {
  const { lines } = layout;
  const fit = furthestFit(layout, start, headSize, max);
  const end = Math.max(fit.end, start); // fit.end < start cannot happen after breakLongLines; guards an infinite loop
  return end < lines.length - 1 && fit.lastParagraphEnd >= start ? fit.lastParagraphEnd : end;
}

/** The next piece's first line after `start`: a new piece never starts with blank lines outside a fence. */
function skipBlankLines({ lines, fences }: Layout, start: number): number {
  let at = start;
  while (at < lines.length && (lines[at] ?? '').trim() === '' && (fences[at - 1] ?? null) === null) at++;
  return at;
}

/**
 * Returns pieces of at most `max` characters whose concatenation keeps all of the text (whitespace at the
 * cut points aside). `max` must be at least 2 × 100 + 20 so a reopened fence always fits.
 */
export function splitMarkdown(text: string, max: number = SLACK_LIMITS.markdownBlock): string[] {
  if (max < 2 * MAX_REOPEN + 20) throw new RangeError(`max must be at least ${2 * MAX_REOPEN + 20}`);
  if (text.length <= max) return [text];

  const lines = breakLongLines(text.split('\n'), Math.floor(max / 2));
  const layout: Layout = { lines, fences: fencesAfterLines(lines) };
  const { fences } = layout;

  const pieces: string[] = [];
  let start = 0;
  while (start < lines.length) {
    const reopen = start > 0 ? (fences[start - 1] ?? null) : null;
    const head = reopen ? [reopen.open] : [];
    const headSize = head.reduce((n, l) => n + l.length + 1, 0);
    const cutAt = cutPoint(layout, start, headSize, max);

    const body = [...head, ...lines.slice(start, cutAt + 1)];
    const fence = fences[cutAt] ?? null;
    if (fence && cutAt < lines.length - 1) body.push(closingLine(fence));
    const piece = body.join('\n').replace(/\s+$/, '');
    if (piece.trim() !== '') pieces.push(piece);

    start = skipBlankLines(layout, cutAt + 1);
  }
  return pieces;
}
