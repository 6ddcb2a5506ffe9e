import type { Stop } from './budget.js';
import { abandonedRecords } from './delegate.js';
import type { ActionRecord } from './gated-calls.js';
import { errorResult } from './observation.js';
import type { EngineDeps } from './ports.js';
import type { EndedRun, RunState } from './run-state.js';
import type { StopReason } from './run-status.js';
import { fillOpenSlots, flushTurn } from './turn.js';

const STATUS_OF: Record<StopReason, EndedRun['status']> = {
  completed: 'completed',
  max_steps: 'stopped',
  deadline: 'stopped',
  token_budget: 'stopped',
  cost_budget: 'stopped',
  loop_detected: 'stopped',
  tool_errors: 'stopped',
  model_error: 'failed',
  validation_failed: 'failed',
  output_limit: 'failed',
  content_filter: 'failed',
  refused: 'failed',
  internal_error: 'failed',
  context_overflow: 'stopped',
  cancelled: 'cancelled',
};

/** Freezes the active-time clock: time spent paused or after the end does not count. */
export function pauseClock(state: RunState, now: number): RunState {
  const { usage } = state;
  if (usage.activeSince === null) return state;
  return {
    ...state,
    usage: { ...usage, activeMs: usage.activeMs + Math.max(0, now - usage.activeSince), activeSince: null },
  };
}

/**
 * Ends the run. Calls of an open turn that have no result yet get one saying they were not executed,
 * so the stored conversation stays valid (a follow-up in the thread reuses it).
 */
export function endRun(state: RunState, stop: Stop, deps: Pick<EngineDeps, 'clock' | 'emit'>): RunState {
  const now = deps.clock.now();
  let next = state;
  if (next.turn) {
    const pending = next.turn.pending;
    const notExecuted: ActionRecord[] = pending.map((p) => ({
      toolCallId: p.toolCallId,
      tool: p.tool,
      argsHash: p.argsHash,
      outcome: stop.reason === 'cancelled' ? 'cancelled' : 'not_executed',
      summary: `not executed: ${stop.message}`,
    }));
    const code = stop.reason === 'cancelled' ? 'cancelled' : 'run_stopped';
    // Children still working are recorded, so that whoever ends this run cancels them too.
    const abandoned = abandonedRecords(next.turn.delegated ?? []);
    next = {
      ...next,
      actions: notExecuted.length > 0 ? next.actions.concat(notExecuted) : next.actions,
      ...(abandoned.length > 0 ? { subagents: (next.subagents ?? []).concat(abandoned) } : {}),
      turn: fillOpenSlots(next.turn, (_id, tool) =>
        errorResult(
          code,
          `Not executed: ${tool} was not run because the run ended (${stop.reason}). ${stop.message}`,
        ),
      ),
    };
    next = flushTurn(next);
  }
  next = pauseClock(next, now);
  const status = STATUS_OF[stop.reason];
  next = { ...next, status, stopReason: stop.reason, stopMessage: stop.message, updatedAt: now };
  // A run cancelled while it asked for more budget asks no longer.
  if (next.budgetAsk) next = { ...next, budgetAsk: null };
  deps.emit({ type: 'finished', runId: next.runId, status, stopReason: stop.reason, message: stop.message });
  return next;
}
