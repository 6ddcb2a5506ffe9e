import type { ToolResult, TruncationInfo } from './tool-result.js';

const MARKER = (info: TruncationInfo) =>
  `\n…[truncated by loopgate: showing the first ${info.keptHeadChars} and last ${info.keptTailChars} of ${info.totalChars} characters]…\n`;

/** Keeps the head (2/3) and the tail (1/3) of text longer than `max`, with a marker giving the total. */
export function truncateText(text: string, max: number): { text: string; info?: TruncationInfo } {
  if (text.length <= max) return { text };
  const head = Math.floor((max * 2) / 3);
  const tail = Math.max(0, max - head);
  const info: TruncationInfo = { totalChars: text.length, keptHeadChars: head, keptTailChars: tail };
  return { text: text.slice(0, head) + MARKER(info) + text.slice(text.length - tail), info };
}

/** Text form of a tool's data: strings as they are, everything else as indented JSON. */
export function dataText(data: unknown): string {
  if (typeof data === 'string') return data;
  if (data === undefined) return 'null';
  try {
    return JSON.stringify(data, null, 2) ?? 'null';
  } catch {
    return String(data);
  }
}

/** Bounds a successful result so a 5 MB log never reaches the model whole. */
export function boundResult(data: unknown, maxChars: number): ToolResult {
  if (typeof data === 'string') {
    const cut = truncateText(data, maxChars);
    return cut.info ? { ok: true, data: cut.text, truncated: cut.info } : { ok: true, data };
  }
  const text = dataText(data);
  if (text.length <= maxChars) return { ok: true, data: data === undefined ? null : data };
  const cut = truncateText(text, maxChars);
  return { ok: true, data: cut.text, truncated: cut.info };
}

/** The `tool` message content: compact JSON of the result. */
export function renderResult(result: ToolResult): string {
  return JSON.stringify(result);
}

/** A short, one-line summary of a result for evidence, traces and action records. */
export function summarise(result: ToolResult, max = 300): string {
  const text = result.ok ? dataText(result.data) : `${result.error.code}: ${result.error.message}`;
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

export function errorResult(code: string, message: string): ToolResult {
  return { ok: false, error: { code, message } };
}
