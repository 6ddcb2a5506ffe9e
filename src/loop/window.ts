/**
 * Fitting each model request into the context window: the step asks `fitWindow` for the messages to
 * send (compacting first when the request would pass the threshold), corrects its estimates with each
 * reply's usage (`afterReply`), and hands a refusal of a request as too long to `afterRefusal`.
 */
import { MIN_REPLY_TOKENS, type Stop } from './budget.js';
import { compact, planCut, windowMargin } from './compaction.js';
import {
  compactionThreshold,
  corrected,
  MAX_TOKEN_RATIO,
  modelView,
  nextTokenRatio,
  tokenRatio,
} from './context.js';
import type { ContextLimits } from './context-window.js';
import { ModelError } from './errors.js';
import { requestTokens } from './estimate.js';
import type { Message } from './messages.js';
import type { ModelReply, ToolSchema } from './model-port.js';
import type { EngineDeps } from './ports.js';
import type { RunState } from './run-state.js';

type Fitted =
  | {
      ok: true;
      /** The run, with a new compaction record when one was made (and its calls charged). */
      state: RunState;
      /** What the model is sent. */
      messages: readonly Message[];
      /** The engine's own estimate of the request's input tokens (uncorrected: budgets use it). */
      rawTokens: number;
      /** The most reply tokens the window has room for (Infinity without context limits). */
      room: number;
    }
  | { ok: false; state: RunState; stop: Stop };

/** Requests refused as too long in a row before the run stops (`context_overflow`). */
const MAX_REFUSALS = 2;

const roomFor = (limits: ContextLimits, tokens: number) =>
  limits.windowTokens - windowMargin(limits) - tokens;

function overflow(limits: ContextLimits, tokens: number, compacted: boolean): Stop {
  const after = compacted ? ', even after summarising its earlier part' : '';
  return {
    reason: 'context_overflow',
    message: `Stopped: the conversation needs about ${tokens} tokens, more than the model's context window of ${limits.windowTokens} tokens${after}. Try asking for less at once, or in a new thread.`,
  };
}

/**
 * The request to send next: the model's view of the run, compacted first when its corrected estimate
 * passes the threshold (or the server refused the previous request as too long). Stops the run
 * (`context_overflow`) when no compaction brings it within the window, or as a budget would when a
 * summary call cannot be paid for.
 */
export async function fitWindow(
  state: RunState,
  tools: readonly ToolSchema[],
  deps: EngineDeps,
): Promise<Fitted> {
  const messages = modelView(state);
  const rawTokens = requestTokens(messages, tools);
  const limits = state.limits.context;
  if (!limits) return { ok: true, state, messages, rawTokens, room: Number.POSITIVE_INFINITY };
  const tokens = corrected(rawTokens, tokenRatio(state));
  const refused = (state.context?.refusals ?? 0) > 0;
  const room = roomFor(limits, tokens);
  if (!refused && tokens <= compactionThreshold(limits))
    return { ok: true, state, messages, rawTokens, room };
  const cut = planCut(state, tools, limits);
  if (!cut) {
    if (!refused && room >= MIN_REPLY_TOKENS) return { ok: true, state, messages, rawTokens, room };
    return { ok: false, state, stop: overflow(limits, tokens, (state.compactions?.length ?? 0) > 0) };
  }
  deps.logger.info(
    { runId: state.runId, tokens, upTo: cut.upTo, refused },
    'compacting the run to fit the window',
  );
  const done = await compact(state, cut, tools, deps);
  if (!done.ok) return done;
  const view = modelView(done.state);
  const raw = requestTokens(view, tools);
  const after = corrected(raw, tokenRatio(done.state));
  if (roomFor(limits, after) < MIN_REPLY_TOKENS)
    return { ok: false, state: done.state, stop: overflow(limits, after, true) };
  return { ok: true, state: done.state, messages: view, rawTokens: raw, room: roomFor(limits, after) };
}

/** The run's accounting after a reply to a request estimated at `rawTokens`: the new ratio, no refusal. */
export function afterReply(state: RunState, reply: ModelReply, rawTokens: number): RunState {
  if (!state.limits.context) return state;
  const ratio = nextTokenRatio(reply.usage?.inputTokens, rawTokens) ?? tokenRatio(state);
  return { ...state, context: { tokenRatio: ratio } };
}

/**
 * After a model error: null unless the server refused the request as longer than the window. Then the
 * run goes on with its estimates scaled up by half and the next request compacted first; refused
 * MAX_REFUSALS times in a row, it stops (`context_overflow`).
 */
export function afterRefusal(state: RunState, err: unknown): { state: RunState } | { stop: Stop } | null {
  const limits = state.limits.context;
  if (!limits || !(err instanceof ModelError) || !err.contextExceeded) return null;
  const refusals = (state.context?.refusals ?? 0) + 1;
  if (refusals >= MAX_REFUSALS) {
    return {
      stop: {
        reason: 'context_overflow',
        message: `Stopped: the model refused the conversation as longer than its context window (configured as ${limits.windowTokens} tokens), even after summarising its earlier part. Try asking for less at once, or in a new thread.`,
      },
    };
  }
  const ratio = Math.min(MAX_TOKEN_RATIO, (state.context?.tokenRatio ?? 1) * 1.5);
  return { state: { ...state, context: { tokenRatio: ratio, refusals } } };
}
