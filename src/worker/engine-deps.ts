import type { EngineEvent } from '../loop/engine-events.js';
import type { EngineDeps } from '../loop/ports.js';
import type { Logger } from '../loop/tool-contract.js';
import { recordEngineEvent } from '../metrics/metrics.js';
import type { WorkerRuntime } from './runtime.js';
import type { TraceRecorder } from './trace-recorder.js';

/**
 * The engine's ports as a job gives them: the worker's model, tools and clock, the job's logger, and
 * every event recorded in the run's trace and the metrics, then handed to `also` (e.g. progress in Slack).
 */
export function engineDeps(
  rt: WorkerRuntime,
  log: Logger,
  trace: TraceRecorder,
  also?: (event: EngineEvent) => void,
): EngineDeps {
  return {
    model: rt.model,
    tools: rt.tools,
    clock: rt.clock,
    logger: log,
    emit: (event) => {
      trace.record(event);
      if (rt.metrics) recordEngineEvent(rt.metrics, event);
      also?.(event);
    },
  };
}
