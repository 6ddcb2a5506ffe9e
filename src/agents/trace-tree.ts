/**
 * A run's trace as a tree: each sub-agent call carries its child run's own trace, and so on down, so the
 * Details modal and `loopgate trace` show a child's steps inside its parent's. Each child is loaded from
 * the store like any run (a child's id opens it alone).
 */
import type { RunState } from '../loop/run-state.js';
import { type TraceView, timingsFromTrace, traceFromRunState } from '../slack/trace.js';
import type { TraceEntry } from '../store/records.js';

interface TraceSource {
  loadRun(runId: string): Promise<{ state: RunState } | null>;
  readTrace(runId: string): Promise<TraceEntry[]>;
}

/** Levels of sub-agents shown below the run (deeper children are named, not loaded). */
const TRACE_TREE_DEPTH = 4;

/** The trace of `state` (whose trace entries are `entries`) with its children's traces nested. */
export async function traceTree(
  source: TraceSource,
  state: RunState,
  entries: readonly TraceEntry[],
  depth = TRACE_TREE_DEPTH,
): Promise<TraceView> {
  const view = traceFromRunState(state, timingsFromTrace(entries));
  if (depth <= 0) return view;
  const calls = view.steps.flatMap((s) => s.calls).filter((c) => c.subagent !== undefined);
  await Promise.all(
    calls.map(async (call) => {
      const sub = call.subagent!;
      const [child, childEntries] = await Promise.all([
        source.loadRun(sub.runId),
        source.readTrace(sub.runId),
      ]);
      if (child) sub.trace = await traceTree(source, child.state, childEntries, depth - 1);
    }),
  );
  return view;
}
