import type { EngineEvent, EventSink } from '../loop/engine-events.js';
import type { TraceEntry } from '../store/records.js';
import type { RunStore } from '../store/runs/run-store.js';

/**
 * The trace entry kept for an engine event, or null for one not worth a write. Only what the run's
 * messages and state do not already hold is kept: timings, outcomes, decisions. Tool names and
 * arguments, usage and the stop message are in the messages and the RunState; a step's start and a
 * read's start follow from the end's time and duration. A gated call's start is kept: it shows that a
 * side effect began even when a crash keeps its end from being recorded.
 */
export function traceEntryOf(event: EngineEvent, at: number): TraceEntry | null {
  switch (event.type) {
    case 'step_started':
    // The run's state keeps its budget asks and grants (budgetAsk, extensions).
    case 'budget_asked':
    case 'budget_extended':
      return null;
    case 'model_replied':
      return {
        type: event.type,
        at,
        step: event.step,
        durationMs: event.durationMs,
        ...(event.model === undefined ? {} : { model: event.model }),
      };
    case 'tool_retried':
      return {
        type: event.type,
        at,
        toolCallId: event.toolCallId,
        effect: event.effect,
        attempt: event.attempt,
        code: event.code,
        message: event.message,
        delayMs: event.delayMs,
      };
    case 'tool_started':
      return event.effect === 'read'
        ? null
        : { type: event.type, at, toolCallId: event.toolCallId, effect: event.effect };
    case 'tool_finished':
      return {
        type: event.type,
        at,
        toolCallId: event.toolCallId,
        effect: event.effect,
        ok: event.ok,
        durationMs: event.durationMs,
        ...(event.code === undefined ? {} : { code: event.code }),
      };
    case 'approval_needed':
      return { type: event.type, at, toolCallIds: event.calls.map((call) => call.toolCallId) };
    case 'decision_applied':
      return {
        type: event.type,
        at,
        toolCallId: event.toolCallId,
        decision: event.decision,
        ...(event.by === undefined ? {} : { by: event.by }),
      };
    case 'answer_rejected':
      return { type: event.type, at, problems: event.problems };
    case 'plan_changed':
      // The new plan itself is on the call (run state) and its new approval round.
      return {
        type: event.type,
        at,
        toolCallId: event.toolCallId,
        ...(event.plan.ok ? { planHash: event.plan.hash } : {}),
      };
    case 'context_compacted':
      // The record itself is kept with the run (its compactions); the trace adds how long it took.
      return { type: event.type, at, upTo: event.upTo, durationMs: event.durationMs };
    case 'finished':
      return { type: event.type, at, status: event.status, stopReason: event.stopReason };
    case 'delegated':
      return {
        type: event.type,
        at,
        calls: event.calls.map((c) => ({
          toolCallId: c.toolCallId,
          agent: c.agent,
          childRunId: c.childRunId,
        })),
      };
    case 'subagent_finished':
      return {
        type: event.type,
        at,
        toolCallId: event.toolCallId,
        agent: event.agent,
        childRunId: event.childRunId,
        outcome: event.outcome,
        durationMs: event.durationMs,
      };
  }
}

/**
 * Buffers the trace entries of one job's engine events. The checkpoint takes them (`take`) and writes
 * them with the step in the same script; `flush` writes whatever was recorded after the last one.
 * `untrustedText` gives a tool's description when it comes from outside loopgate (an MCP server):
 * it is kept once per tool and job, where the tool is first used (`tool_described`).
 */
export class TraceRecorder {
  private buffer: TraceEntry[] = [];
  private readonly described = new Set<string>();

  constructor(
    private readonly runs: RunStore,
    private readonly runId: string,
    private readonly now: () => number,
    private readonly untrustedText?: (tool: string) => string | undefined,
  ) {}

  readonly record: EventSink = (event: EngineEvent) => {
    const at = this.now();
    if (event.type === 'tool_started' && !this.described.has(event.tool)) {
      this.described.add(event.tool);
      const text = this.untrustedText?.(event.tool);
      if (text) this.buffer.push({ type: 'tool_described', at, tool: event.tool, text });
    }
    const entry = traceEntryOf(event, at);
    if (entry) this.buffer.push(entry);
  };

  /** The entries recorded since the previous take or flush; the buffer starts over. */
  take(): TraceEntry[] {
    const entries = this.buffer;
    this.buffer = [];
    return entries;
  }

  async flush(): Promise<void> {
    const entries = this.take();
    if (entries.length > 0) await this.runs.appendTrace(this.runId, entries);
  }
}
