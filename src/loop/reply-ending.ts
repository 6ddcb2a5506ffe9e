/**
 * How a model reply ended, when it did not end well: cut off at the output token limit, stopped by the
 * provider's content filter, or refused. The engine never executes a cut tool call, asks once for a
 * shorter reply, and tells the person plainly what happened; the texts below for the model are never
 * shown to people.
 */
import type { Message } from './messages.js';
import type { ModelReply } from './model-port.js';
import type { RunState } from './run-state.js';

export type ReplyEnding =
  | { kind: 'complete' }
  | { kind: 'cut_off' }
  | { kind: 'filtered' }
  | { kind: 'refused'; refusal: string };

export function endingOf(reply: ModelReply): ReplyEnding {
  const refusal = reply.refusal?.trim();
  if (refusal) return { kind: 'refused', refusal };
  if (reply.finishReason === 'content_filter') return { kind: 'filtered' };
  if (reply.finishReason === 'length') return { kind: 'cut_off' };
  return { kind: 'complete' };
}

/** Starts the note that asks the model for a shorter reply; recognised to ask only once in a row. */
const CUT_OFF_NOTE = '[loopgate] Your previous reply was cut off at the output token limit';

/** The note sent to the model after a cut reply (never shown to people). */
export function cutOffNote(maxOutputTokens: number | undefined, hadToolCalls: boolean): Message {
  const limit = maxOutputTokens === undefined ? '' : ` of ${maxOutputTokens} tokens`;
  const what = hadToolCalls
    ? 'Its tool calls were incomplete and were not executed. Send them again with shorter arguments, or fewer at once.'
    : 'Write the whole answer again, shorter, so that it fits.';
  return { role: 'user', content: `${CUT_OFF_NOTE}${limit}. ${what}` };
}

/** True when the model was just asked for a shorter reply: the run's last message is that note. */
export function justAskedToShorten(state: RunState): boolean {
  const last = state.messages[state.messages.length - 1];
  return last?.role === 'user' && last.content.startsWith(CUT_OFF_NOTE);
}

const REFUSAL_CHARS = 500;

/** What the person is told for each bad ending (stop messages are written for them). */
export const ENDING_MESSAGES = {
  cutOffTwice: (maxOutputTokens: number | undefined) =>
    `The answer was cut off at the model's output token limit${
      maxOutputTokens === undefined ? '' : ` (${maxOutputTokens} tokens)`
    }, and again when I asked for a shorter one, so I have no complete answer. Try asking for less at once.`,
  filtered:
    "The model provider's content filter stopped the answer, so I have no answer to show. Rephrasing the question may help.",
  refused: (refusal: string) =>
    `The model declined to answer: “${
      refusal.length > REFUSAL_CHARS ? `${refusal.slice(0, REFUSAL_CHARS - 1)}…` : refusal
    }”`,
};
