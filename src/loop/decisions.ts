import { callContext, callTimeoutMs, runToolCall } from './call-pipeline.js';
import { continueWhenSettled } from './delegate.js';
import { RunStatusError } from './errors.js';
import type { CallContext } from './execute.js';
import { endRun } from './finish.js';
import type {
  ActionRecord,
  ApprovedDecision,
  CallPlan,
  Decision,
  GatedCall,
  PlanHashes,
  RejectedDecision,
  UndecidedDecision,
} from './gated-calls.js';
import { argsHash, callSignature } from './hash.js';
import { errorResult, summarise } from './observation.js';
import { checkPlan } from './plan.js';
import type { EngineDeps } from './ports.js';
import type { Evidence, RunState, StepOutcome } from './run-state.js';
import type { EditedArguments, ToolResult } from './tool-result.js';
import { setSlot } from './turn.js';

const by = (d: Decision) => (d.by ? ` by <@${d.by}>` : '');
const because = (d: Decision) => (d.reason ? `: ${d.reason}` : '');

export interface Resolution {
  result: ToolResult;
  action: ActionRecord;
  evidence: Evidence[];
}

/** An approved call whose plan changed before it ran: it stays pending and is asked again with `plan`. */
interface AskAgain {
  askAgain: CallPlan & { ok: true };
}

function record(
  call: GatedCall,
  d: Decision,
  outcome: ActionRecord['outcome'],
  result: ToolResult,
): ActionRecord {
  return {
    toolCallId: call.toolCallId,
    tool: call.tool,
    argsHash: call.argsHash,
    outcome,
    ...(d.by ? { decidedBy: d.by } : {}),
    ...(d.reason ? { reason: d.reason } : {}),
    summary: summarise(result, 200),
  };
}

function refused(call: GatedCall, d: RejectedDecision | UndecidedDecision): Resolution {
  const texts: Record<(RejectedDecision | UndecidedDecision)['kind'], string> = {
    rejected: `Not executed: ${call.tool} was rejected${by(d)}${because(d)}. Do not retry it unless the user asks you to.`,
    expired: `Not executed: nobody approved or rejected ${call.tool} before its approval expired, so it did not run and it will not run later. Tell the user plainly that it did not happen and that nobody decided; do not say it will happen later. Do not retry it unless the user asks you to.`,
    cancelled: `Not executed: the run was cancelled${by(d)} before ${call.tool} was decided.`,
    outcome_unknown: `Outcome unknown: ${call.tool} was approved and started, but the worker stopped before recording its result. It may or may not have taken effect; it was not run again. Tell the user to check.`,
  };
  if (d.kind === 'rejected' && d.shadow) {
    const result = errorResult(
      'shadow_mode',
      `Not executed: ${call.tool} was not run (${d.reason ?? 'shadow mode'}). People only see what it would do; it did not happen and will not happen later. Tell the user plainly that it was not executed (shadow mode); never say it was done or will be done. Do not retry it.`,
    );
    return { result, action: record(call, d, 'rejected', result), evidence: [] };
  }
  const result = errorResult(d.kind, texts[d.kind]);
  return { result, action: record(call, d, d.kind, result), evidence: [] };
}

/** What a result the ledger returned instead of executing says about the call. */
function ledgerOutcome(result: ToolResult): ActionRecord['outcome'] {
  if (result.ok) return 'succeeded';
  if (result.error.code === 'outcome_unknown') return 'outcome_unknown';
  if (result.error.code === 'approval_mismatch' || result.error.code === 'durability_unconfirmed')
    return 'not_executed';
  return 'failed';
}

/**
 * The call as an approver edited it: the edited arguments checked against the tool's schema again (the
 * engine's word is final, whatever form the person used) and bound to their own hash. Returns a result
 * instead when they do not fit, so nothing runs.
 */
function editedCall(
  call: GatedCall,
  d: ApprovedDecision & { edited: NonNullable<ApprovedDecision['edited']> },
  deps: EngineDeps,
): { call: GatedCall; edited: EditedArguments } | { refused: Resolution } {
  const parsed = deps.tools.get(call.tool)?.parameters.safeParse(d.edited.args);
  if (!parsed?.success) {
    const why = parsed ? parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`) : [];
    const result = errorResult(
      'invalid_arguments',
      `Not executed: the arguments of ${call.tool} as edited${by(d)} do not fit its schema${why.length > 0 ? ` (${why.slice(0, 5).join('; ')})` : ''}.`,
    );
    return { refused: { result, action: record(call, d, 'not_executed', result), evidence: [] } };
  }
  const args = parsed.data;
  return {
    call: { ...call, args, argsHash: argsHash(args), preview: undefined },
    edited: {
      ...(d.edited.by ? { by: d.edited.by } : {}),
      note: `A person${d.edited.by ? ` (<@${d.edited.by}>)` : ''} changed the arguments before approving: the call was made with these arguments, not the ones you sent.`,
      args,
    },
  };
}

/**
 * Executes one approved gated call of `state`'s run (through the ledger, so at most once), then verifies
 * it when the tool can. Does not change the run: the caller places the result. Also used for a call
 * approved again after an unknown outcome, when the run may have ended since. With `d.edited`, the
 * edited arguments run instead of the model's (their hash must be the approved one).
 */
export async function executeApproved(
  state: RunState,
  asked: GatedCall,
  d: ApprovedDecision,
  deps: EngineDeps,
): Promise<Resolution | AskAgain> {
  let call = asked;
  let edited: EditedArguments | undefined;
  if (d.edited) {
    const checked = editedCall(asked, { ...d, edited: d.edited }, deps);
    if ('refused' in checked) return checked.refused;
    ({ call, edited } = checked);
  }
  const res = await executeExactly(state, call, d, deps);
  if ('askAgain' in res) return res;
  return edited && res.action.outcome !== 'not_executed'
    ? { ...res, result: { ...res.result, edited } }
    : res;
}

/**
 * The plan check of a tool with `plan`, immediately before execution (invariant 10): the same plan as
 * the deciders saw lets the call proceed (with the plans' hashes for the ledger); a changed plan asks
 * again; a failed one blocks it. Both are recorded in the ledger as not run. A call the ledger shows
 * as begun is not planned again: the ledger answers for it.
 */
async function planGate(
  call: GatedCall,
  d: ApprovedDecision,
  tool: NonNullable<ReturnType<EngineDeps['tools']['get']>>,
  ctx: CallContext,
  timeoutMs: number,
  deps: EngineDeps,
): Promise<{ proceed: PlanHashes | undefined } | { stop: Resolution | AskAgain }> {
  if (!tool.plan || !((await deps.ledger?.unstarted?.(call)) ?? true)) return { proceed: undefined };
  const check = await checkPlan(tool, call.args, d.plan, ctx, timeoutMs);
  if (check.kind === 'same') return { proceed: check.plans };
  deps.logger.info(
    { runId: ctx.runId, toolCallId: call.toolCallId, tool: call.tool, plan: check.kind, ...check.plans },
    check.kind === 'changed' ? 'plan changed since approval: asking again' : 'plan failed: not executed',
  );
  const result =
    check.kind === 'changed'
      ? errorResult(
          'plan_changed',
          `Not executed yet: the plan of ${call.tool} changed since it was approved.`,
        )
      : errorResult(
          'plan_failed',
          `Not executed: the plan of ${call.tool} could not be computed before it ran (${check.error}), so it was not run. It will not run later. Tell the user plainly that it did not happen and why.`,
        );
  await deps.ledger?.block?.(call, result, check.plans);
  if (check.kind === 'changed') return { stop: { askAgain: check.current } };
  return { stop: { result, action: record(call, d, 'not_executed', result), evidence: [] } };
}

async function executeExactly(
  state: RunState,
  call: GatedCall,
  d: ApprovedDecision,
  deps: EngineDeps,
): Promise<Resolution | AskAgain> {
  if (d.argsHash !== call.argsHash) {
    // Nothing runs on an approval of other arguments than those shown: invariant 2.
    const result = errorResult(
      'approval_mismatch',
      `Not executed: the approval of ${call.tool} does not match the arguments that were shown.`,
    );
    return { result, action: record(call, d, 'not_executed', result), evidence: [] };
  }
  const tool = deps.tools.get(call.tool);
  if (!tool) {
    const result = errorResult('unknown_tool', `Not executed: ${call.tool} is no longer configured.`);
    return { result, action: record(call, d, 'not_executed', result), evidence: [] };
  }
  const ctx = callContext(state, call.toolCallId, deps);
  // Approved work is not cut short by the run's deadline: the person asked for it to happen.
  const timeoutMs = callTimeoutMs(state, tool, deps, false);
  const planned = await planGate(call, d, tool, ctx, timeoutMs, deps);
  if ('stop' in planned) return planned.stop;
  const gate = deps.ledger ? await deps.ledger.begin(call, planned.proceed) : ({ proceed: true } as const);
  if (!gate.proceed) {
    return {
      result: gate.result,
      action: record(call, d, ledgerOutcome(gate.result), gate.result),
      evidence: [],
    };
  }
  const { ledger } = deps;
  const ran = await runToolCall(
    state,
    { tool, args: call.args, toolCallId: call.toolCallId, effect: call.effect },
    deps,
    { bounded: false, verify: true, ...(ledger && { record: (result) => ledger.finish(call, result) }) },
  );
  // The action records the execution's outcome; a failed verification is evidence, not a failed call.
  return { ...ran, action: record(call, d, ran.result.ok ? 'succeeded' : 'failed', ran.result) };
}

/**
 * The call stays pending with its new plan (the model's own arguments kept: an edit's arguments come
 * with the next round's decision); the worker asks again in a fresh round, the old decisions void.
 */
function askedAgain(state: RunState, call: GatedCall, plan: CallPlan, deps: EngineDeps): RunState {
  deps.emit({ type: 'plan_changed', runId: state.runId, toolCallId: call.toolCallId, tool: call.tool, plan });
  const pending = state.turn!.pending.map((p) => (p.toolCallId === call.toolCallId ? { ...p, plan } : p));
  return { ...state, turn: { ...state.turn!, pending }, updatedAt: deps.clock.now() };
}

/** Nothing of the paused turn waits any more: neither a decision nor a sub-agent's end. */
const isSettled = (state: RunState) =>
  state.turn!.pending.length === 0 && (state.turn!.delegated ?? []).length === 0;

/** The run's rejections, with `d` remembered when it is a person's (not a shadow's) rejection of `call`. */
function rejectedAfter(rejected: RunState['rejected'], call: GatedCall, d: Decision): RunState['rejected'] {
  if (d.kind !== 'rejected' || d.shadow) return rejected;
  return {
    ...rejected,
    [callSignature(call.tool, call.argsHash)]: {
      ...(d.by ? { by: d.by } : {}),
      ...(d.reason ? { reason: d.reason } : {}),
    },
  };
}

/** The run once `call` is resolved: its slot filled, no longer pending, its action and evidence kept. */
function withResolution(
  state: RunState,
  call: GatedCall,
  d: Decision,
  res: Resolution,
  deps: EngineDeps,
): RunState {
  const turn = setSlot(state.turn!, call.toolCallId, res.result);
  return {
    ...state,
    turn: { ...turn, pending: turn.pending.filter((p) => p.toolCallId !== call.toolCallId) },
    actions: state.actions.concat(res.action),
    evidence: res.evidence.length > 0 ? state.evidence.concat(res.evidence) : state.evidence,
    rejected: rejectedAfter(state.rejected, call, d),
    updatedAt: deps.clock.now(),
  };
}

/**
 * Applies people's decisions to the gated calls of the paused turn, one by one and in the order given:
 * approved calls execute (then verify), the others become results saying why they did not run. The run
 * continues once every gated call of the turn is decided; until then it stays `awaiting_approval`.
 * A decision for a call that is not pending (already decided, or unknown) is ignored.
 */
export async function applyDecisions(
  state: RunState,
  decisions: readonly Decision[],
  deps: EngineDeps,
): Promise<StepOutcome> {
  if (state.status !== 'awaiting_approval' || !state.turn)
    throw new RunStatusError(state.status, 'decide on');
  let next: RunState = state;
  for (const d of decisions) {
    const call = next.turn!.pending.find((p) => p.toolCallId === d.toolCallId);
    if (!call) {
      deps.logger.warn(
        { runId: state.runId, toolCallId: d.toolCallId, kind: d.kind },
        'decision for a call that is not pending',
      );
      continue;
    }
    const res = d.kind === 'approved' ? await executeApproved(next, call, d, deps) : refused(call, d);
    if ('askAgain' in res) {
      next = askedAgain(next, call, res.askAgain, deps);
      if (deps.checkpoint) await deps.checkpoint(next);
      continue;
    }
    next = withResolution(next, call, d, res, deps);
    deps.emit({
      type: 'decision_applied',
      runId: state.runId,
      toolCallId: call.toolCallId,
      decision: d.kind,
      ...(d.by ? { by: d.by } : {}),
    });
    // The decision that settles the turn is saved by continueWhenSettled with the turn's results: saved
    // here, a crash before that save would leave a run awaiting approval with nothing left to decide,
    // which no job moves on. Unsaved, a crash re-applies the decision, and the ledger runs nothing twice.
    if (deps.checkpoint && !isSettled(next)) await deps.checkpoint(next);
  }
  // Sub-agent calls of the same turn may still be working: the turn waits for them too.
  return continueWhenSettled(next, deps);
}

/** Cancels a run at a step boundary: pending gated calls are answered as cancelled and never run. */
export function cancelRun(state: RunState, deps: Pick<EngineDeps, 'clock' | 'emit'>, who?: string): RunState {
  if (state.status !== 'running' && state.status !== 'awaiting_approval') {
    throw new RunStatusError(state.status, 'cancel');
  }
  const message = who ? `Cancelled by <@${who}>.` : 'Cancelled.';
  return endRun(state, { reason: 'cancelled', message }, deps);
}
