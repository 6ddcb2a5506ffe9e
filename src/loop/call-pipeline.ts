/**
 * One tool call's execution, the same for every call the engine runs: announced (`tool_started`),
 * executed with its retries, timeout and result bound (execute.ts), recorded (an approved call's ledger
 * entry, before anything else hears of the result), announced again (`tool_finished`) and, when it
 * succeeded, kept as evidence and verified where asked. Reads run it as is (step.ts); approved calls
 * wrap the plan check and the ledger's begin around it (decisions.ts).
 */
import { remainingMs } from './budget.js';
import { type CallContext, executeCall, verifyCall } from './execute.js';
import { summarise } from './observation.js';
import type { EngineDeps } from './ports.js';
import { keeperFor } from './read-result.js';
import { realSleep, retryPlanFor } from './retry.js';
import type { Evidence, RunState } from './run-state.js';
import type { AnyTool, ToolEffect } from './tool-contract.js';
import type { ToolResult } from './tool-result.js';

export interface PipelineCall {
  tool: AnyTool;
  /** Validated arguments, exactly as they run. */
  args: unknown;
  toolCallId: string;
  effect: ToolEffect;
}

export interface PipelineOptions {
  /**
   * Cut short by the run's deadline and its cancel: reads. Approved work is not, because the person
   * asked for it to happen.
   */
  bounded: boolean;
  /** Persists the result before `tool_finished` is told of it (an approved call's ledger entry). */
  record?: (result: ToolResult) => Promise<void>;
  /** Runs the tool's read-only verification after a success (approved writes). */
  verify?: boolean;
}

export interface PipelineOutcome {
  result: ToolResult;
  evidence: Evidence[];
}

/** What a tool call knows of its run: ids, requester and a logger bound to both. */
export function callContext(state: RunState, toolCallId: string, deps: EngineDeps): CallContext {
  return {
    runId: state.runId,
    toolCallId,
    ...(deps.threadId === undefined ? {} : { threadId: deps.threadId }),
    requester: state.requester,
    logger: deps.logger.child({ runId: state.runId, toolCallId }),
  };
}

/** The tool's own timeout, or the run's; a bounded call's is lowered to the time the run has left. */
export function callTimeoutMs(state: RunState, tool: AnyTool, deps: EngineDeps, bounded: boolean): number {
  const own = tool.timeoutMs ?? state.limits.toolTimeoutMs;
  return bounded ? Math.max(0, Math.min(own, remainingMs(state, deps.clock.now()))) : own;
}

function evidenceOf(
  call: PipelineCall,
  kind: Evidence['kind'],
  ok: boolean,
  summary: string,
  at: number,
): Evidence {
  return { toolCallId: call.toolCallId, tool: call.tool.name, kind, ok, summary, at };
}

/** Runs one validated call through the pipeline; never throws for the tool's sake (only `record` may). */
export async function runToolCall(
  state: RunState,
  call: PipelineCall,
  deps: EngineDeps,
  options: PipelineOptions,
): Promise<PipelineOutcome> {
  const { tool, args, toolCallId, effect } = call;
  const told = { runId: state.runId, toolCallId, tool: tool.name, effect };
  const ctx = callContext(state, toolCallId, deps);
  deps.emit({ type: 'tool_started', ...told, args });
  const ran = await executeCall(tool, args, ctx, {
    timeoutMs: tool.timeoutMs ?? state.limits.toolTimeoutMs,
    maxObservationChars: state.limits.maxObservationChars,
    ...retryPlanFor(tool),
    ...(options.bounded && {
      timeLeftMs: () => remainingMs(state, deps.clock.now()),
      ...(deps.cancelSignal ? { cancel: deps.cancelSignal } : {}),
    }),
    ...keeperFor(state, deps, toolCallId),
    sleep: deps.sleep ?? realSleep,
    random: deps.random ?? Math.random,
    onRetry: (a) => deps.emit({ type: 'tool_retried', ...told, ...a }),
  });
  if (options.record) await options.record(ran.result);
  deps.emit({
    type: 'tool_finished',
    ...told,
    ok: ran.result.ok,
    code: ran.result.ok ? undefined : ran.result.error.code,
    durationMs: ran.durationMs,
  });
  if (!ran.result.ok) return { result: ran.result, evidence: [] };
  const evidence = [evidenceOf(call, 'result', true, summarise(ran.result), deps.clock.now())];
  if (!options.verify) return { result: ran.result, evidence };
  const check = await verifyCall(tool, args, ran.raw, ctx, callTimeoutMs(state, tool, deps, options.bounded));
  if (!check) return { result: ran.result, evidence };
  evidence.push(evidenceOf(call, 'verification', check.ok, check.summary, deps.clock.now()));
  return { result: { ...ran.result, verification: check }, evidence };
}
