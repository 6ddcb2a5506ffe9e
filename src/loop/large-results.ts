/**
 * Tool results longer than `maxObservationChars`: the model sees whole lines from the start and the end
 * with their line numbers, the total size, and a handle; the whole text is kept with the run (a
 * `ResultStore`) so `read_result` can page through it or search it. Pure functions, except `keepText`,
 * which goes through the port.
 */
import { createHash } from 'node:crypto';
import type { KeptResult, ResultStore } from './ports.js';
import type { ToolResult, TruncationInfo } from './tool-result.js';

/**
 * Lines longer than this count as several lines of this length, so a minified JSON document or a
 * one-line log can be paged like any other text. The cut view and `read_result` number lines alike.
 */
export const WRAP_CHARS = 1_000;

/** Room kept for the marker between the head and the tail. */
const MARKER_ROOM = 400;

/** The text's lines as the model reads them: split at newlines (a trailing \r dropped), long ones wrapped. */
export function textLines(text: string): string[] {
  const lines: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.length <= WRAP_CHARS) {
      lines.push(line);
      continue;
    }
    for (let i = 0; i < line.length; i += WRAP_CHARS) lines.push(line.slice(i, i + WRAP_CHARS));
  }
  return lines;
}

// ---------------------------------------------------------------------------------------------------
// Handles
// ---------------------------------------------------------------------------------------------------

const HANDLE = /^res_([0-9a-f]{8})_([A-Za-z0-9_-]{1,100})$/;

const runTag = (runId: string) => createHash('sha256').update(runId).digest('hex').slice(0, 8);

/**
 * The handle of one call's result: the same for every attempt of the call (a retried or recovered call
 * overwrites its own text), and marked with its run, so a handle from another run is recognised.
 */
export function resultHandle(runId: string, toolCallId: string): string {
  return `res_${runTag(runId)}_${toolCallId.replace(/[^A-Za-z0-9_-]/g, '').slice(0, 100)}`;
}

/** Why `handle` cannot name a result of run `runId`, or null when it can. */
export function handleProblem(handle: string, runId: string): string | null {
  const match = HANDLE.exec(handle);
  if (!match) {
    return `"${handle.slice(0, 120)}" is not a result handle. Handles look like res_1a2b3c4d_lg3_0_call1 and come from a result that was too long to show whole.`;
  }
  if (match[1] !== runTag(runId)) {
    return `The handle ${handle} belongs to another run; only results of this run can be read.`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------
// Keeping the whole text
// ---------------------------------------------------------------------------------------------------

/** The start of `text` that fits in `maxBytes` of UTF-8, never ending inside a character. */
export function utf8Prefix(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text, 'utf8') <= maxBytes) return text;
  let end = Math.min(text.length, maxBytes);
  while (end > 0 && Buffer.byteLength(text.slice(0, end), 'utf8') > maxBytes) {
    end = Math.floor(end * 0.9);
  }
  // Grow back to the longest prefix that fits, then step off a lone high surrogate.
  while (end < text.length && Buffer.byteLength(text.slice(0, end + 1), 'utf8') <= maxBytes) end++;
  if (/[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end--;
  return text.slice(0, end);
}

interface KeepLimits {
  maxStoredResultBytes: number;
  maxStoredBytesPerRun: number;
}

/** What keeping a long text came to: the handle and how much was kept, or why nothing was. */
export type Kept = { handle: string; keptChars: number } | { handle: null; reason: string };

/**
 * Keeps `text` (or its start, past `maxStoredResultBytes`) under `handle`. A refusal or a store that
 * cannot be reached is reported, never thrown: the model then gets the cut result without a handle.
 */
export async function keepText(
  store: ResultStore,
  handle: string,
  text: string,
  limits: KeepLimits,
): Promise<Kept> {
  if (limits.maxStoredResultBytes <= 0) return { handle: null, reason: 'long results are not kept' };
  const kept = utf8Prefix(text, limits.maxStoredResultBytes);
  let outcome: KeptResult;
  try {
    outcome = await store.keep(handle, kept, limits.maxStoredBytesPerRun);
  } catch {
    return { handle: null, reason: 'the result store could not be reached' };
  }
  return outcome.kept ? { handle, keptChars: kept.length } : { handle: null, reason: outcome.reason };
}

// ---------------------------------------------------------------------------------------------------
// The cut view
// ---------------------------------------------------------------------------------------------------

/** How many lines from the start and the end fit in `budget` characters, alternately, never overlapping. */
function fitLines(lines: readonly string[], budget: number): { head: number; tail: number } {
  const headBudget = Math.floor((budget * 2) / 3);
  let used = 0;
  let head = 0;
  while (head < lines.length && used + lines[head]!.length + 1 <= headBudget)
    used += lines[head++]!.length + 1;
  let tail = 0;
  while (head + tail < lines.length) {
    const line = lines[lines.length - 1 - tail]!;
    if (used + line.length + 1 > budget) break;
    used += line.length + 1;
    tail++;
  }
  return { head, tail };
}

/** A line range as the model reads it ("lines 3-7", "line 3"). */
const range = (from: number, to: number) => (from === to ? `line ${from}` : `lines ${from}-${to}`);

/**
 * The result the model reads for `text`, longer than `maxChars`: whole lines from the start (about two
 * thirds of the room) and from the end, and between them a note giving the lines shown, the total size
 * and, when it was kept, the handle and how to read on. Text without usable lines (the first does not
 * fit) is cut by characters instead.
 */
export function cutLongText(text: string, maxChars: number, kept: Kept): ToolResult {
  const lines = textLines(text);
  const { head, tail } = fitLines(lines, Math.max(0, maxChars - MARKER_ROOM));
  const total = lines.length;
  const shown =
    head === 0
      ? null
      : tail === 0
        ? range(1, head)
        : `${range(1, head)} and ${range(total - tail + 1, total).replace(/^lines? /, '')}`;
  const whole = `${total} lines, ${text.length} characters`;
  let note: string;
  if (kept.handle === null) {
    note = `…[truncated by loopgate: showing ${shown ?? 'the start and the end'} of ${whole}. The whole result could not be kept (${kept.reason}), so the rest cannot be read.]…`;
  } else {
    const partly =
      kept.keptChars < text.length
        ? ` Only its first ${kept.keptChars} characters are kept (${textLines(text.slice(0, kept.keptChars)).length} lines).`
        : '';
    const next = JSON.stringify({ handle: kept.handle, offset: head + 1 });
    note = `…[loopgate: showing ${shown ?? 'the start and the end'} of ${whole}. The whole result is kept under the handle ${kept.handle}.${partly} Read on with read_result ${next}, or find lines with its "grep" argument.]…`;
  }
  const handle = kept.handle === null ? {} : { handle: kept.handle };
  if (head === 0) {
    const room = Math.max(0, maxChars - note.length - 2);
    const headChars = Math.floor((room * 2) / 3);
    const tailChars = room - headChars;
    const info: TruncationInfo = {
      totalChars: text.length,
      keptHeadChars: headChars,
      keptTailChars: tailChars,
      ...handle,
    };
    return {
      ok: true,
      data: `${text.slice(0, headChars)}\n${note}\n${tailChars > 0 ? text.slice(text.length - tailChars) : ''}`,
      truncated: info,
    };
  }
  const headText = lines.slice(0, head).join('\n');
  const tailText = lines.slice(total - tail).join('\n');
  const info: TruncationInfo = {
    totalChars: text.length,
    keptHeadChars: headText.length,
    keptTailChars: tailText.length,
    lines: { total, head, tail },
    ...handle,
  };
  return { ok: true, data: `${headText}\n${note}${tail > 0 ? `\n${tailText}` : ''}`, truncated: info };
}

// ---------------------------------------------------------------------------------------------------
// Pages of a kept result (read_result)
// ---------------------------------------------------------------------------------------------------

interface PageRequest {
  /** First line to read (1-based); with `grep`, where the search starts. Default 1. */
  offset?: number;
  /** Lines to return (matching lines with `grep`). Default DEFAULT_PAGE_LINES. */
  lines?: number;
  /** Only lines containing this text, compared without regard to case. */
  grep?: string;
}

export const DEFAULT_PAGE_LINES = 200;

/** A page of `text` or a problem for the model (an offset past the end). At most `maxChars` characters. */
export function readPage(
  text: string,
  handle: string,
  request: PageRequest,
  maxChars: number,
): { ok: true; page: string } | { ok: false; problem: string } {
  const lines = textLines(text);
  const total = lines.length;
  const offset = request.offset ?? 1;
  if (offset > total) {
    return {
      ok: false,
      problem: `offset ${offset} is past the end: the result under ${handle} has ${total} lines.`,
    };
  }
  const wanted = request.lines ?? DEFAULT_PAGE_LINES;
  const room = Math.max(0, maxChars - MARKER_ROOM);
  return request.grep === undefined
    ? { ok: true, page: plainPage(lines, handle, offset, wanted, room) }
    : { ok: true, page: grepPage(lines, handle, offset, wanted, room, request.grep) };
}

/** A line shown within `room` characters, cut with a note when it does not fit. */
function fitted(line: string, room: number): string {
  return line.length <= room
    ? line
    : `${line.slice(0, Math.max(0, room - 40))} …[line cut: ${line.length} characters]`;
}

function plainPage(
  lines: readonly string[],
  handle: string,
  offset: number,
  wanted: number,
  room: number,
): string {
  const out: string[] = [];
  let used = 0;
  let i = offset - 1;
  while (i < lines.length && out.length < wanted) {
    const line = out.length === 0 ? fitted(lines[i]!, room) : lines[i]!;
    if (out.length > 0 && used + line.length + 1 > room) break;
    out.push(line);
    used += line.length + 1;
    i++;
  }
  const last = offset + out.length - 1;
  const more =
    i < lines.length
      ? `\n[${lines.length - i} more lines: read_result ${JSON.stringify({ handle, offset: i + 1 })}]`
      : '\n[end of the result]';
  return `[${range(offset, last)} of ${lines.length}]\n${out.join('\n')}${more}`;
}

function grepPage(
  lines: readonly string[],
  handle: string,
  offset: number,
  wanted: number,
  room: number,
  grep: string,
): string {
  const needle = grep.toLowerCase();
  const out: string[] = [];
  let used = 0;
  let i = offset - 1;
  let stoppedAt: number | null = null;
  for (; i < lines.length; i++) {
    if (!lines[i]!.toLowerCase().includes(needle)) continue;
    if (out.length >= wanted) {
      stoppedAt = i;
      break;
    }
    const row = `${i + 1}: ${fitted(lines[i]!, Math.min(room, WRAP_CHARS))}`;
    if (out.length > 0 && used + row.length + 1 > room) {
      stoppedAt = i;
      break;
    }
    out.push(row);
    used += row.length + 1;
  }
  const what = `lines containing ${JSON.stringify(grep)} (any case) from line ${offset} of ${lines.length}`;
  if (out.length === 0) return `[no ${what}]`;
  const more =
    stoppedAt === null
      ? '\n[no more matches]'
      : `\n[more matches: read_result ${JSON.stringify({ handle, offset: stoppedAt + 1, grep })}]`;
  return `[${what}: ${out.length} shown]\n${out.join('\n')}${more}`;
}
