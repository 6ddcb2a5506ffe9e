import { checkAnswer } from './answer.js';
import {
  addUsage,
  chargedUsage,
  costOf,
  exhaustedBudget,
  planRequest,
  priceFor,
  remainingMs,
  type Stop,
} from './budget.js';
import { askOrEnd } from './budget-extension.js';
import { capCalls } from './call-caps.js';
import { callContext, callTimeoutMs, type PipelineOutcome, runToolCall } from './call-pipeline.js';
import { delegateCalls } from './delegate.js';
import { modelFailureSentence, RunStatusError } from './errors.js';
import { replyTokens } from './estimate.js';
import { previewCall } from './execute.js';
import { endRun, pauseClock } from './finish.js';
import type { GatedCall } from './gated-calls.js';
import type { ModelReply } from './model-port.js';
import { planCall } from './plan.js';
import type { EngineDeps } from './ports.js';
import { type PreparedCall, prepareCall } from './prepare.js';
import { runTools } from './read-result.js';
import {
  cutOffNote,
  ENDING_MESSAGES,
  endingOf,
  justAskedToShorten,
  type ReplyEnding,
} from './reply-ending.js';
import { type Evidence, NOT_ENDED, type RunState, type StepOutcome } from './run-state.js';
import type { ToolResult } from './tool-result.js';
import { toolSchemas } from './tool-schemas.js';
import { flushTurn, normaliseCallIds, openTurn, setSlot, turnCalls } from './turn.js';
import { afterRefusal, afterReply, fitWindow } from './window.js';

const final = (state: RunState): StepOutcome => ({ type: 'final', state });

async function save(state: RunState, deps: EngineDeps): Promise<RunState> {
  if (deps.checkpoint) await deps.checkpoint(state);
  return state;
}

/**
 * Advances a running run by one step: calls the model, then acts on its reply. A run recovered with a
 * turn still open (a crash after the model replied) resumes at the tool calls and reuses the reply.
 * Throws only for a run that is not `running` or when `checkpoint` throws.
 */
export async function step(given: RunState, deps: EngineDeps): Promise<StepOutcome> {
  if (given.status !== 'running') throw new RunStatusError(given.status, 'step');
  if (given.turn) return processTurn(given, deps);

  const over = exhaustedBudget(given, deps.clock.now());
  if (over) return budgetStop(given, over, deps);
  const tools = toolSchemas(runTools(given, deps));
  // What the model sees, compacted first when the request would pass the window's threshold.
  const fitted = await fitWindow(given, tools, deps);
  // A cancel that cut a compaction short: the run stays as it was, and stops at the boundary.
  if (!fitted.ok && deps.cancelSignal?.aborted) return { type: 'run_again', state: given };
  if (!fitted.ok) return final(await save(endRun(fitted.state, fitted.stop, deps), deps));
  const state = fitted.state === given ? given : await save(fitted.state, deps);
  const started = deps.clock.now();
  const inputEstimate = fitted.rawTokens;
  const plan = planRequest(state, inputEstimate, priceFor(state.limits, deps.model.model ?? ''));
  if ('reason' in plan) return budgetStop(state, plan, deps);

  const stepNo = state.step + 1;
  deps.emit({ type: 'step_started', runId: state.runId, step: stepNo });
  let reply: ModelReply;
  const controller = new AbortController();
  const deadline = setTimeout(() => controller.abort(), Math.max(0, remainingMs(state, started)));
  const { onModelText } = deps;
  const cancel = deps.cancelSignal;
  try {
    reply = await deps.model.complete({
      messages: fitted.messages,
      tools,
      signal: cancel ? AbortSignal.any([controller.signal, cancel]) : controller.signal,
      maxOutputTokens: Math.min(plan.maxOutputTokens, fitted.room),
      ...(onModelText && {
        onText: (delta: string) => onModelText({ runId: state.runId, step: stepNo, delta }),
      }),
    });
  } catch (err) {
    // Cancelled mid-request: the reply is abandoned, the step not counted; the boundary stops the run.
    if (cancel?.aborted) return { type: 'run_again', state };
    return modelFailed(state, stepNo, err, controller.signal.aborted, deps);
  } finally {
    clearTimeout(deadline);
  }
  const now = deps.clock.now();
  const charged = chargedUsage(reply.usage, {
    inputTokens: inputEstimate,
    outputTokens: replyTokens(reply),
  });
  const cost = costOf(charged, priceFor(state.limits, reply.model));
  deps.emit({
    type: 'model_replied',
    runId: state.runId,
    step: stepNo,
    toolCalls: reply.toolCalls.length,
    durationMs: now - started,
    usage: charged,
    costUsd: cost,
    model: reply.model,
    ...(reply.finishReason === undefined ? {} : { finishReason: reply.finishReason }),
  });
  const usage = addUsage(state.usage, charged, cost);
  const next: RunState = { ...afterReply(state, reply, inputEstimate), step: stepNo, usage, updatedAt: now };

  const ending = endingOf(reply);
  if (ending.kind !== 'complete') return handleBadEnding(next, reply, ending, plan.maxOutputTokens, deps);
  if (reply.toolCalls.length === 0) return handleAnswer(next, reply.content ?? '', deps);

  const calls = normaliseCallIds(reply.toolCalls, stepNo);
  const withTurn: RunState = {
    ...next,
    messages: next.messages.concat({ role: 'assistant', content: reply.content, toolCalls: calls }),
    turn: openTurn(calls),
  };
  return processTurn(await save(withTurn, deps), deps);
}

/**
 * The model request of step `stepNo` failed (not by a cancel): the step counts, and the run either tries
 * again with a smaller window (afterRefusal) or ends, for its deadline (`timedOut`) or the model's error.
 */
async function modelFailed(
  state: RunState,
  stepNo: number,
  err: unknown,
  timedOut: boolean,
  deps: EngineDeps,
): Promise<StepOutcome> {
  const counted = { ...state, step: stepNo };
  const refused = afterRefusal(counted, err);
  if (refused && 'state' in refused) return { type: 'run_again', state: await save(refused.state, deps) };
  const stop = refused
    ? refused.stop
    : timedOut
      ? {
          reason: 'deadline' as const,
          message: 'Stopped: the run ran out of working time waiting for the model.',
        }
      : {
          reason: 'model_error' as const,
          message: modelFailureSentence(err),
        };
  return final(await save(endRun(counted, stop, deps), deps));
}

/** A budget ran out: the run asks for more where its limits allow (budget-extension.ts), else ends. */
async function budgetStop(state: RunState, stop: Stop, deps: EngineDeps): Promise<StepOutcome> {
  const outcome = askOrEnd(state, stop, deps);
  const saved = await save(outcome.state, deps);
  return outcome.type === 'budget_ask' ? { type: 'budget_ask', state: saved } : final(saved);
}

/**
 * A reply that was cut off, filtered or refused. A cut reply is never acted on (its tool calls may be
 * incomplete): the model is asked once for a shorter one; cut again, the run stops and says so.
 */
async function handleBadEnding(
  state: RunState,
  reply: ModelReply,
  ending: Exclude<ReplyEnding, { kind: 'complete' }>,
  maxOutputTokens: number | undefined,
  deps: EngineDeps,
): Promise<StepOutcome> {
  if (ending.kind === 'refused') {
    const stop = { reason: 'refused' as const, message: ENDING_MESSAGES.refused(ending.refusal) };
    return final(await save(endRun(state, stop, deps), deps));
  }
  if (ending.kind === 'filtered') {
    const stop = { reason: 'content_filter' as const, message: ENDING_MESSAGES.filtered };
    return final(await save(endRun(state, stop, deps), deps));
  }
  if (justAskedToShorten(state)) {
    const stop = { reason: 'output_limit' as const, message: ENDING_MESSAGES.cutOffTwice(maxOutputTokens) };
    return final(await save(endRun(state, stop, deps), deps));
  }
  deps.emit({
    type: 'answer_rejected',
    runId: state.runId,
    problems: [`reply cut off at the output token limit (${reply.toolCalls.length} tool calls not executed)`],
  });
  const text = reply.content?.trim();
  const retry: RunState = {
    ...state,
    messages: state.messages.concat(
      ...(text ? [{ role: 'assistant' as const, content: text }] : []),
      cutOffNote(maxOutputTokens, reply.toolCalls.length > 0),
    ),
  };
  return { type: 'run_again', state: await save(retry, deps) };
}

async function handleAnswer(state: RunState, content: string, deps: EngineDeps): Promise<StepOutcome> {
  const check = checkAnswer(content, state, deps.validateAnswer);
  const withReply: RunState = {
    ...state,
    messages: state.messages.concat({ role: 'assistant', content }),
  };
  if (check.ok) {
    const done = endRun(
      { ...withReply, answer: check.parts },
      { reason: 'completed', message: 'Completed.' },
      deps,
    );
    return final(await save(done, deps));
  }
  deps.emit({ type: 'answer_rejected', runId: state.runId, problems: check.problems });
  const retries = state.answerRetries + 1;
  if (retries > state.limits.maxAnswerRetries) {
    const stop = {
      reason: 'validation_failed' as const,
      message: `I could not give an answer that passed loopgate's checks (${retries} tries): ${check.forPerson.join('; ')}.`,
    };
    return final(await save(endRun({ ...withReply, answerRetries: retries }, stop, deps), deps));
  }
  const correction = `[loopgate] Your final answer was not accepted:\n- ${check.problems.join('\n- ')}\nFix this and answer again.`;
  const retry: RunState = {
    ...withReply,
    answerRetries: retries,
    messages: withReply.messages.concat({ role: 'user', content: correction }),
  };
  return { type: 'run_again', state: await save(retry, deps) };
}

/** Updates the identical-call streak call by call; returns the index of the call that trips it, or -1. */
function trackRepeats(
  state: RunState,
  prepared: readonly PreparedCall[],
): { state: RunState; trippedAt: number } {
  let { lastCallSignature, identicalCalls } = state.brakes;
  let trippedAt = -1;
  prepared.forEach((p, i) => {
    identicalCalls = p.signature === lastCallSignature ? identicalCalls + 1 : 1;
    lastCallSignature = p.signature;
    if (trippedAt < 0 && identicalCalls >= state.limits.maxIdenticalCalls) trippedAt = i;
  });
  return { state: { ...state, brakes: { ...state.brakes, lastCallSignature, identicalCalls } }, trippedAt };
}

/**
 * Counts failed results in a row, in call order. Gated calls (not yet results), calls refused for the
 * flood caps (nothing was tried) and reads abandoned for a cancel leave the count alone.
 */
function trackErrors(state: RunState, results: readonly (ToolResult | null)[]): RunState {
  let errors = state.brakes.consecutiveToolErrors;
  for (const r of results) {
    // A read abandoned for a cancel failed through no fault of its own: the run stops anyway.
    if (r === null || (!r.ok && (r.error.code === 'too_many_calls' || r.error.code === 'cancelled')))
      continue;
    errors = r.ok ? 0 : errors + 1;
  }
  return { ...state, brakes: { ...state.brakes, consecutiveToolErrors: errors } };
}

/** Executes the read calls of a turn in parallel; each gets its own timeout, bounded by the deadline. */
async function runReads(
  state: RunState,
  prepared: readonly PreparedCall[],
  deps: EngineDeps,
): Promise<{ results: (ToolResult | null)[]; evidence: Evidence[] }> {
  const ran = await Promise.all(
    prepared.map(async (p): Promise<PipelineOutcome | null> => {
      if (p.kind === 'gated' || p.kind === 'delegated') return null;
      if (p.kind === 'error') {
        deps.emit({
          type: 'tool_finished',
          runId: state.runId,
          toolCallId: p.call.id,
          tool: p.call.name,
          effect: deps.tools.get(p.call.name)?.effect ?? 'read',
          ok: false,
          code: p.result.ok ? undefined : p.result.error.code,
          durationMs: 0,
        });
        return { result: p.result, evidence: [] };
      }
      const call = { tool: p.tool, args: p.args, toolCallId: p.call.id, effect: 'read' as const };
      return runToolCall(state, call, deps, { bounded: true });
    }),
  );
  return { results: ran.map((r) => r?.result ?? null), evidence: ran.flatMap((r) => r?.evidence ?? []) };
}

async function gate(
  state: RunState,
  prepared: readonly PreparedCall[],
  deps: EngineDeps,
): Promise<GatedCall[]> {
  const reason = turnReason(state);
  const gated: GatedCall[] = [];
  for (const p of prepared) {
    if (p.kind !== 'gated') continue;
    const ctx = callContext(state, p.call.id, deps);
    const timeoutMs = callTimeoutMs(state, p.tool, deps, true);
    const preview = await previewCall(p.tool, p.args, ctx, timeoutMs);
    // A failed plan is shown as such: approving it asks again with a fresh plan before anything runs.
    const plan = await planCall(p.tool, p.args, ctx, timeoutMs);
    gated.push({
      toolCallId: p.call.id,
      tool: p.tool.name,
      effect: p.tool.effect === 'notify' ? 'notify' : 'write',
      args: p.args,
      argsHash: p.hash,
      ...(preview === undefined ? {} : { preview }),
      ...(plan === undefined ? {} : { plan }),
      ...(reason === undefined ? {} : { reason }),
      idempotent: p.tool.idempotent === true,
    });
  }
  return gated;
}

/** The model's own words in the turn's assistant message: its stated reason for the calls. */
function turnReason(state: RunState): string | undefined {
  const last = state.messages[state.messages.length - 1];
  const text = last?.role === 'assistant' ? last.content?.trim() : undefined;
  return text ? text : undefined;
}

/**
 * Acts on the open turn: errors become results, reads execute, gated calls pause the run. Brakes are
 * checked here, where the model cannot argue with them.
 */
async function processTurn(state: RunState, deps: EngineDeps): Promise<StepOutcome> {
  const calls = turnCalls(state);
  const tools = runTools(state, deps);
  const prepared = capCalls(
    calls.map((c) => prepareCall(c, tools, state, deps.withheld)),
    state.limits,
  );

  const repeats = trackRepeats(state, prepared);
  let next = repeats.state;
  if (repeats.trippedAt >= 0) {
    const name = calls[repeats.trippedAt]!.name;
    const stop = {
      reason: 'loop_detected' as const,
      message: `Stopped: the model called ${name} with the same arguments ${next.limits.maxIdenticalCalls} times in a row.`,
    };
    return final(await save(endRun(next, stop, deps), deps));
  }

  const { results, evidence } = await runReads(next, prepared, deps);
  let turn = next.turn!;
  results.forEach((r, i) => {
    if (r) turn = setSlot(turn, calls[i]!.id, r);
  });
  next = trackErrors({ ...next, turn, evidence: next.evidence.concat(evidence) }, results);
  if (next.brakes.consecutiveToolErrors >= next.limits.maxConsecutiveToolErrors) {
    const stop = {
      reason: 'tool_errors' as const,
      message: `Stopped after ${next.brakes.consecutiveToolErrors} failed tool calls in a row.`,
    };
    return final(await save(endRun(next, stop, deps), deps));
  }

  const gated = await gate(next, prepared, deps);
  const now = deps.clock.now();
  const delegated = delegateCalls(
    next,
    prepared.flatMap((p) => (p.kind === 'delegated' ? [{ toolCallId: p.call.id, ...p }] : [])),
    now,
  );
  if (gated.length > 0 || delegated.length > 0) {
    // Sub-agent calls wait like gated ones: the run pauses until every one has its child's result.
    const paused: RunState = {
      ...pauseClock(next, now),
      status: 'awaiting_approval',
      ...NOT_ENDED,
      turn: { ...next.turn!, pending: gated, ...(delegated.length > 0 ? { delegated } : {}) },
      updatedAt: now,
    };
    if (gated.length > 0) deps.emit({ type: 'approval_needed', runId: state.runId, calls: gated });
    if (delegated.length > 0) deps.emit({ type: 'delegated', runId: state.runId, calls: delegated });
    return {
      type: 'interruption',
      state: await save(paused, deps),
      gated,
      ...(delegated.length > 0 ? { delegated } : {}),
    };
  }
  return { type: 'run_again', state: await save({ ...flushTurn(next), updatedAt: now }, deps) };
}
