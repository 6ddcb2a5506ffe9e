/**
 * What the model sees of a run, and how many tokens that is. The stored history is append-only; after
 * a compaction (compaction.ts) the model sees the system prompt, the person's question, one assistant
 * message with the summary of what came before the cut, and every message after the cut unchanged.
 * Pure functions of the run state, so a run loaded by another worker gives the model the same view.
 */
import type { CompactionRecord, ContextLimits } from './context-window.js';
import type { Message } from './messages.js';
import type { RunState } from './run-state.js';

/** Bounds of the correction ratio: a reply whose usage says otherwise is likely misreported. */
const MIN_TOKEN_RATIO = 0.75;
export const MAX_TOKEN_RATIO = 4;

/** Starts the summary message; recognised by nothing, it tells the model what it reads. */
const SUMMARY_LEAD = '[loopgate] The earlier part of this run was compacted to fit the context window.';

export const lastCompaction = (state: RunState): CompactionRecord | undefined => state.compactions?.at(-1);

/** The assistant message that stands for the compacted part of the history. */
export function summaryText(c: CompactionRecord): string {
  return `${SUMMARY_LEAD} It covered ${c.upTo - 1} messages. My summary of it:\n${c.summary}\n\n${c.notes}`;
}

// The head of the view after a compaction: built once per record, so token counts are cached by object.
const heads = new WeakMap<CompactionRecord, Message[]>();

function headOf(state: RunState, c: CompactionRecord): Message[] {
  let head = heads.get(c);
  if (!head) {
    head = [
      state.messages[0]!,
      { role: 'user', content: state.question },
      { role: 'assistant', content: summaryText(c) },
    ];
    heads.set(c, head);
  }
  return head;
}

/**
 * The messages the model is sent: the whole history, or after a compaction its head (system prompt,
 * question, summary) and the messages from the cut on. A cut is never before a tool message, so every
 * tool call the model sees comes with all its results, and every result with its call.
 */
export function modelView(state: RunState): Message[] {
  const c = lastCompaction(state);
  if (!c) return state.messages;
  return [...headOf(state, c), ...state.messages.slice(c.upTo)];
}

/**
 * Index of the person's question: the last user message with its text before the run's first tool
 * message (earlier turns of the thread come before it, the run's own messages after it).
 */
export function questionIndex(state: RunState): number {
  const { messages } = state;
  let found = -1;
  for (let i = 1; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === 'tool') break;
    // The question's message may start with a note (the time, src/loop/state.ts) before the words.
    if (m.role === 'user' && (m.content === state.question || m.content.endsWith(`\n\n${state.question}`)))
      found = i;
  }
  return found < 0 ? 1 : found;
}

// ---------------------------------------------------------------------------------------------------
// Token accounting
// ---------------------------------------------------------------------------------------------------

/** The scale of the run's estimates: the last reply's reported input over the engine's estimate. */
export const tokenRatio = (state: RunState): number => state.context?.tokenRatio ?? 1;

/** An estimate scaled by the run's ratio. */
export const corrected = (rawTokens: number, ratio: number): number => Math.ceil(rawTokens * ratio);

/**
 * The ratio to keep after a reply whose request the engine estimated at `rawTokens`: the server's
 * count over the estimate, within [MIN_TOKEN_RATIO, MAX_TOKEN_RATIO]; null when the server reported no
 * input count (the previous ratio stays).
 */
export function nextTokenRatio(reportedInput: number | undefined, rawTokens: number): number | null {
  if (reportedInput === undefined || reportedInput <= 0 || rawTokens <= 0) return null;
  return Math.min(MAX_TOKEN_RATIO, Math.max(MIN_TOKEN_RATIO, reportedInput / rawTokens));
}

/** Input tokens above which the next request is compacted first. */
export const compactionThreshold = (limits: ContextLimits): number =>
  Math.floor((limits.windowTokens * limits.compactAtPercent) / 100);
