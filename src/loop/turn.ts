import type { Message, ToolCall } from './messages.js';
import { renderResult } from './observation.js';
import type { RunState, Turn } from './run-state.js';
import type { ToolResult } from './tool-result.js';

/** Ids unique within the run, whatever the model sent: some servers reuse `call_0` every turn. */
export function normaliseCallIds(calls: readonly ToolCall[], step: number): ToolCall[] {
  return calls.map((c, i) => ({
    ...c,
    id: `lg${step}_${i}_${c.id.replace(/[^A-Za-z0-9_-]/g, '').slice(0, 24)}`,
  }));
}

export function openTurn(calls: readonly ToolCall[]): Turn {
  return { slots: calls.map((c) => ({ toolCallId: c.id, tool: c.name, result: null })), pending: [] };
}

/** The tool calls of the turn in progress: they are those of the last message, an assistant one. */
export function turnCalls(state: RunState): ToolCall[] {
  const last = state.messages[state.messages.length - 1];
  if (last?.role !== 'assistant' || !last.toolCalls) {
    throw new Error(`run ${state.runId}: a turn is open but the last message has no tool calls`);
  }
  return last.toolCalls;
}

/** Gives every slot still without a result (including pending gated calls) the result `make` builds. */
export function fillOpenSlots(turn: Turn, make: (toolCallId: string, tool: string) => ToolResult): Turn {
  return {
    slots: turn.slots.map((s) => (s.result ? s : { ...s, result: make(s.toolCallId, s.tool) })),
    pending: [],
  };
}

export function setSlot(turn: Turn, toolCallId: string, result: ToolResult): Turn {
  return {
    ...turn,
    slots: turn.slots.map((s) => (s.toolCallId === toolCallId ? { ...s, result } : s)),
  };
}

/** Appends one tool message per call, in call order, and closes the turn. Every slot must be filled. */
export function flushTurn(state: RunState): RunState {
  const turn = state.turn;
  if (!turn) return state;
  const messages: Message[] = turn.slots.map((s) => {
    if (!s.result) throw new Error(`run ${state.runId}: tool call ${s.toolCallId} has no result`);
    return { role: 'tool', toolCallId: s.toolCallId, name: s.tool, content: renderResult(s.result) };
  });
  return { ...state, messages: state.messages.concat(messages), turn: null };
}
