import { portsForRun } from '../agents/run-ports.js';
import type { Logger } from '../loop/tool-contract.js';
import type { LoadedRun } from '../store/runs/run-store.js';
import type { TraceCarrier } from '../telemetry/carrier.js';
import type { RunSegment } from '../telemetry/run-tracer.js';
import type { WorkerRuntime } from './runtime.js';

/** The job a stretch of a run belongs to, with the trace context its data carried. */
export interface JobTrace {
  name: string;
  trace?: TraceCarrier;
}

/**
 * Opens the `invoke_agent` span of this job's stretch of the run, in the run's trace: the trace context
 * recorded on the run (the bot's event span, or the first stretch's own span when the bot traced
 * nothing); for a sub-agent's run without one, its parent's. The first stretch records it, so a resume
 * hours later on another worker continues the same trace. A resume links to the bot's decision span.
 * Null when tracing is off or the context cannot be read (tracing never stops a run).
 */
export async function openSegment(
  rt: WorkerRuntime,
  loaded: LoadedRun,
  jobId: string,
  job: JobTrace | undefined,
  log: Logger,
): Promise<RunSegment | null> {
  const telemetry = rt.telemetry;
  if (!telemetry) return null;
  try {
    const { state, slack } = loaded;
    const runId = state.runId;
    // Read with the run (no round trip of its own) when it was loaded from Redis.
    const stored =
      loaded.traceParent !== undefined ? loaded.traceParent : await rt.store.runs.traceParent(runId);
    let parent: TraceCarrier | undefined = stored ? { traceparent: stored } : undefined;
    if (!parent && job?.name === 'start' && job.trace) parent = job.trace;
    if (!parent && state.agent) {
      const parentRun = await rt.store.runs.traceParent(state.agent.parentRunId);
      if (parentRun) parent = { traceparent: parentRun };
    }
    const permalink = await rt.threadPermalink?.(slack.channelId, slack.threadTs);
    const requestModel = portsForRun(rt, state).model.model;
    const segment = telemetry.segment(parent, {
      runId,
      jobId,
      ...(job ? { job: job.name } : {}),
      ...(state.agent ? { agent: state.agent.name } : {}),
      ...(requestModel ? { requestModel } : {}),
      slack: {
        teamId: slack.teamId,
        channelId: slack.channelId,
        threadTs: slack.threadTs,
        ...(permalink ? { permalink } : {}),
      },
      ...(job?.name === 'start' ? { question: state.question } : {}),
      ...(job?.name !== 'start' && job?.trace ? { follows: job.trace } : {}),
    });
    if (!stored) await rt.store.runs.setTraceParent(runId, (parent ?? segment.carrier()).traceparent);
    return segment;
  } catch (err) {
    log.warn({ err }, 'could not open the trace span of this job');
    return null;
  }
}
