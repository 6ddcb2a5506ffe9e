import { endedChildren, type PrefetchedChildren, startChildren } from '../agents/child-runs.js';
import { portsForRun } from '../agents/run-ports.js';
import { cancelRun } from '../loop/decisions.js';
import type { EngineEvent } from '../loop/engine-events.js';
import type { Decision, GatedCall } from '../loop/gated-calls.js';
import type { EngineDeps } from '../loop/ports.js';
import {
  type Boundary,
  type RunOutcome,
  runUntilPause,
  settleAndContinue,
  settleBudgetAndContinue,
} from '../loop/run.js';
import type { RunState } from '../loop/run-state.js';
import { isFinished } from '../loop/state.js';
import type { Logger } from '../loop/tool-contract.js';
import type { RunSlackContext } from '../slack/notifier-port.js';
import {
  AWAITING_APPROVAL_TEXT,
  askingText,
  progressText,
  subagentProgressText,
  THINKING_TEXT,
} from '../slack/progress.js';
import type { RunSurface } from '../slack/surfaces/agent-surfaces.js';
import { RunCheckpointer, storeExecutionLedger } from '../store/engine-ports.js';
import { approvalIdFor } from '../store/ids.js';
import { runResultStore } from '../store/runs/result-store.js';
import type { LoadedRun } from '../store/runs/run-store.js';
import type { RunSegment } from '../telemetry/run-tracer.js';
import { budgetDecisionOf, cancelBudgetAsk, postBudgetAsk } from './budget-pause.js';
import { channelTools, runChannelScope } from './channel-scope.js';
import { deliverEnd, UNDELIVERED_RETRY_MS } from './deliver-end.js';
import { engineDeps } from './engine-deps.js';
import { cancelApprovalCards, markUnknownOutcomes, postPause } from './pause.js';
import { askAgainForChangedPlans, showBlockedPlans } from './plan-changed.js';
import { type AdvanceResult, type HeldLease, withRunLease } from './run-lease.js';
import { type JobTrace, openSegment } from './run-telemetry.js';
import type { WorkerRuntime } from './runtime.js';
import { TraceRecorder } from './trace-recorder.js';

/** This job's `invoke_agent` span, opened once the run is loaded (tracing on only). */
interface SegmentHolder {
  jobId?: string;
  job?: JobTrace;
  segment: RunSegment | null;
}

/** Slack coordinates of a loaded run, for the notifier. */
export const slackContextOf = (run: LoadedRun): RunSlackContext => ({ runId: run.state.runId, ...run.slack });

/**
 * Decisions recorded for the paused turn's calls (by people, rules or grants) that the engine has not
 * applied yet: the approval records loadRun read in the same snapshot as the run (the latest round of an
 * edited one). An approved edited round carries its edited arguments, which run instead of the model's.
 */
function recordedDecisions(loaded: LoadedRun): Decision[] {
  const { state } = loaded;
  const records = new Map(loaded.pauseApprovals.map((record) => [record.toolCallId, record]));
  const decisions: Decision[] = [];
  for (const call of state.turn?.pending ?? []) {
    const record = records.get(call.toolCallId);
    if (!record || record.status === 'pending' || record.status === 'superseded') continue;
    const base = {
      toolCallId: record.toolCallId,
      ...(record.decidedBy ? { by: record.decidedBy } : {}),
      ...(record.decisionReason ? { reason: record.decisionReason } : {}),
    };
    const edited = record.original
      ? { edited: { args: record.args, ...(record.editedBy ? { by: record.editedBy } : {}) } }
      : {};
    // The plan its deciders were shown: the call runs only if the plan at execution is the same.
    const plan = record.plan ? { plan: record.plan } : {};
    decisions.push(
      record.status === 'approved'
        ? { ...base, kind: 'approved', argsHash: record.argsHash, ...edited, ...plan }
        : { ...base, kind: record.status, ...(record.via === 'shadow' ? { shadow: true } : {}) },
    );
  }
  return decisions;
}

/** The approval (latest round) of each paused call, for its ledger entry; round 1 when none is stored. */
function pauseApprovalIds(loaded: LoadedRun): (call: Pick<GatedCall, 'toolCallId'>) => string {
  const ids = new Map(loaded.pauseApprovals.map((r) => [r.toolCallId, r.approvalId]));
  return (call) => ids.get(call.toolCallId) ?? approvalIdFor(loaded.state.runId, call.toolCallId);
}

function progressOf(event: EngineEvent): string | null {
  switch (event.type) {
    case 'step_started':
      return THINKING_TEXT;
    case 'tool_started':
      return progressText([event.tool]);
    case 'approval_needed':
    case 'budget_asked':
      return AWAITING_APPROVAL_TEXT;
    case 'delegated':
      return askingText(event.calls.map((call) => call.agent));
    default:
      return null;
  }
}

/**
 * How a run shows progress: a person's run in its own placeholder; a sub-agent's in its parent's, named,
 * and only once that placeholder exists (it never posts one of its own, which nothing would remove).
 */
function progressShower(rt: WorkerRuntime, loaded: LoadedRun, ctx: RunSlackContext) {
  const agent = loaded.state.agent?.name;
  if (agent === undefined) return (text: string) => rt.notifier.progress(ctx, text);
  return (text: string) =>
    ctx.placeholderTs ? rt.notifier.progress(ctx, subagentProgressText(agent, text)) : Promise.resolve();
}

/**
 * Advances one run as far as it can go now, holding its lease: a running run steps until it pauses or
 * ends; a paused run applies the decisions people recorded; a cancel request ends it at this step
 * boundary. Safe to call again for the same run at any time (redelivered or recovered jobs): what is
 * already done is found in the store and not redone.
 */
export function advanceRun(
  rt: WorkerRuntime,
  runId: string,
  jobId: string,
  prefetched?: PrefetchedChildren,
  job?: JobTrace,
): Promise<AdvanceResult> {
  const log = rt.logger.child({ runId, jobId });
  return withRunLease(rt, runId, jobId, log, async (lease) => {
    const trace = new TraceRecorder(rt.store.runs, runId, rt.clock.now, rt.untrustedToolText);
    const watched = rt.cancels?.watch(runId);
    const held: SegmentHolder = { jobId, ...(job ? { job } : {}), segment: null };
    let outcome = 'error';
    const heldJob: HeldJob = { rt, runId, lease, trace, log, cancelSignal: watched?.signal, held };
    // Slack calls of this job hang from its `invoke_agent` span once advanceRound opened it.
    const advance = () => advanceHeld(heldJob, prefetched);
    try {
      const result = await (rt.telemetry
        ? rt.telemetry.within({ current: () => held.segment?.span }, advance)
        : advance());
      outcome = result.type;
      return result;
    } finally {
      held.segment?.end(outcome);
      watched?.stop();
      await trace.flush().catch((err: unknown) => log.warn({ err }, 'could not write the trace'));
    }
  });
}

/** What every round of one job works with: the run's lease, trace, logger and span. */
interface HeldJob {
  rt: WorkerRuntime;
  runId: string;
  lease: HeldLease;
  trace: TraceRecorder;
  log: Logger;
  /** Aborted once the run's cancel is recorded (cancel-watch.ts). */
  cancelSignal: AbortSignal | undefined;
  held: SegmentHolder;
}

/** One round's run as loaded, where it shows in Slack, and the engine wired to both. */
interface Round {
  job: HeldJob;
  loaded: LoadedRun;
  ctx: RunSlackContext;
  surface: RunSurface | null;
  segment: RunSegment | null;
  deps: EngineDeps;
  boundary: Boundary;
  cancelRequested(): boolean;
  /** Children share the thread, and the placeholder as it is known now (their progress edits it). */
  childSlack(): LoadedRun['slack'];
}

/**
 * How a round ends: the job's result, or `decided`: it reached a pause some of whose calls were decided as
 * they were stored (by a rule or a grant), which the next round applies.
 */
type RoundEnd = AdvanceResult | 'decided';

const MAX_AUTO_ROUNDS = 50;

/**
 * Advances the run round by round, in this job, while its pauses are found decided at once. Each such
 * round applies at least one decision; past MAX_AUTO_ROUNDS the run is handed back to the queue. Children
 * the job prefetched are for its first round only.
 */
async function advanceHeld(job: HeldJob, prefetched?: PrefetchedChildren): Promise<AdvanceResult> {
  for (let rounds = 0; ; rounds++) {
    const end = await advanceRound(job, rounds === 0 ? prefetched : undefined);
    if (end !== 'decided') return end;
    if (rounds >= MAX_AUTO_ROUNDS) return { type: 'busy', retryInMs: 0 };
  }
}

/** One round: the run as stored now is delivered if it ended, else taken on from where it stopped. */
async function advanceRound(job: HeldJob, prefetched: PrefetchedChildren | undefined): Promise<RoundEnd> {
  const { rt, runId, log, held } = job;
  const loaded = await rt.store.runs.loadRun(runId);
  if (!loaded) {
    log.warn({}, 'run not found (expired or never created); nothing to do');
    return { type: 'done' };
  }
  if (rt.telemetry && !held.segment)
    held.segment = await openSegment(rt, loaded, held.jobId ?? 'unknown', held.job, log);
  const ctx = slackContextOf(loaded);
  // A stream a dead job left open is finished (marked interrupted) before anything else shows.
  const surface = rt.surfaces ? await rt.surfaces.forRun(ctx, loaded.state, log) : null;
  await surface?.recover();
  if (isFinished(loaded.state)) {
    return delivered(await deliverEnd(rt, loaded.state, ctx, loaded.answerTs, surface));
  }
  const round = await wireEngine(job, loaded, ctx, surface, held.segment);
  const { state } = loaded;
  if (round.cancelRequested()) return handleOutcome(round, { type: 'cancel_requested', state });
  if (state.budgetAsk) return resumeBudget(round);
  if (state.status === 'awaiting_approval') return resumeApprovals(round, prefetched);
  await surface?.begin();
  return handleOutcome(round, await runUntilPause(state, round.deps, round.boundary));
}

/** The engine's ports for this round: its events shown, its state checkpointed, its calls in the ledger. */
async function wireEngine(
  job: HeldJob,
  loaded: LoadedRun,
  ctx: RunSlackContext,
  surface: RunSurface | null,
  segment: RunSegment | null,
): Promise<Round> {
  const { rt, runId, lease, trace, log, cancelSignal } = job;
  const { fence } = lease;
  const placeholder = placeholderRecorder(job, loaded);
  const checkpointer = new RunCheckpointer(rt.store.runs, runId, fence, loaded.persisted);
  const deps: EngineDeps = {
    ...engineDeps(rt, log, trace, eventShower(rt, loaded, ctx, surface, segment, placeholder.record)),
    ...(surface && { onModelText: ({ delta }: { delta: string }) => surface.text(delta) }),
    // A sub-agent's run works with its agent's model and only its agent's tools, within the channel's.
    ...withChannel(portsForRun(rt, loaded.state), await runChannelScope(rt, ctx)),
    checkpoint: async (state) => {
      if (lease.lost()) log.warn({}, 'checkpoint after a failed lease renewal');
      await checkpointer.checkpoint(state, trace.take());
    },
    ledger: storeExecutionLedger(rt.store.ledger, {
      runId,
      fence,
      clock: rt.clock,
      approvalIdOf: pauseApprovalIds(loaded),
    }),
    results: runResultStore(rt.store.results, runId, fence),
    threadId: `${loaded.slack.channelId}:${loaded.slack.threadTs}`,
    ...(cancelSignal ? { cancelSignal } : {}),
  };
  const cancelRequested = () =>
    loaded.cancelRequest !== null || checkpointer.cancelRequested || cancelSignal?.aborted === true;
  const childSlack = () => {
    const known = placeholder.known();
    return { ...loaded.slack, ...(known ? { placeholderTs: known } : {}) };
  };
  // A job whose lease may have passed to another stops at the boundary, before its next model call.
  const boundary = { shouldCancel: cancelRequested, shouldYield: () => rt.stopping() || lease.lost() };
  return { job, loaded, ctx, surface, segment, deps, boundary, cancelRequested, childSlack };
}

/**
 * The run's placeholder, recorded as soon as it exists, so a worker that dies mid-run leaves its successor
 * the same message.
 */
function placeholderRecorder({ rt, runId, log }: HeldJob, loaded: LoadedRun) {
  let known = loaded.slack.placeholderTs;
  const record = () => {
    const ts = rt.notifier.placeholderOf(runId);
    if (!ts || ts === known) return;
    known = ts;
    rt.store.runs
      .setPlaceholder(runId, ts)
      .catch((err: unknown) => log.warn({ err }, 'could not record the placeholder'));
  };
  return { record, known: () => known };
}

/** Each engine event goes to the run's span and its surfaces, and shows as progress where they do not. */
function eventShower(
  rt: WorkerRuntime,
  loaded: LoadedRun,
  ctx: RunSlackContext,
  surface: RunSurface | null,
  segment: RunSegment | null,
  onShown: () => void,
): (event: EngineEvent) => void {
  const show = progressShower(rt, loaded, ctx);
  return (event) => {
    segment?.sink(event);
    surface?.event(event);
    // The session's status and the stream show the progress; the placeholder only without them.
    // A pause of shadow calls only waits for nobody (they are closed at once): no "awaiting approval".
    const allShadow =
      event.type === 'approval_needed' &&
      event.calls.every((c) => (rt.policy.shadow?.(c.tool, ctx.channelId) ?? null) !== null);
    const text = surface?.showing || allShadow ? null : progressOf(event);
    if (text) void show(text).then(onShown);
  };
}

/** Waiting for more budget: go on only once a person (or the expiry) answered the ask. */
async function resumeBudget(round: Round): Promise<RoundEnd> {
  const { rt, runId } = round.job;
  const { state } = round.loaded;
  const decision =
    budgetDecisionOf(state, await rt.store.budgetAsks.get(runId)) ??
    (await postBudgetAsk(rt, state, round.ctx));
  if (!decision) return { type: 'done' };
  await round.surface?.begin();
  return handleOutcome(round, await settleBudgetAndContinue(state, decision, round.deps, round.boundary));
}

/** A pause goes on with the decisions recorded and the children that ended since it was posted. */
async function resumeApprovals(round: Round, prefetched: PrefetchedChildren | undefined): Promise<RoundEnd> {
  const { rt, lease, log } = round.job;
  const { loaded } = round;
  const { state } = loaded;
  const decisions = recordedDecisions(loaded);
  const children = await endedChildren(rt, state, prefetched);
  if (decisions.length === 0 && children.length === 0) {
    // Nothing decided or ended yet: make sure the pause is fully posted and its children exist (a
    // crash may have cut either short).
    const { decided } = await postPause(rt, state, round.ctx, lease.fence);
    await startChildren(rt, state, round.childSlack(), log);
    return decided ? 'decided' : { type: 'done' };
  }
  await round.surface?.begin();
  round.segment?.approvalWaits(loaded.pauseApprovals);
  const outcome = await settleAndContinue(state, decisions, children, round.deps, round.boundary);
  // Approved calls whose plan changed stayed pending: ask again before the pause is posted.
  if (outcome.type === 'interruption')
    await askAgainForChangedPlans(rt, outcome.state, loaded.pauseApprovals);
  for (const action of outcome.state.actions.slice(state.actions.length)) {
    rt.metrics?.executions.inc({ outcome: action.outcome });
  }
  await markUnknownOutcomes(rt, state, outcome.state, pauseApprovalIds(loaded));
  await showBlockedPlans(rt, state, outcome.state, pauseApprovalIds(loaded));
  return handleOutcome(round, outcome);
}

/** Where the engine stopped: a cancel is applied, a pause or budget ask posted, a yield handed back. */
async function handleOutcome(round: Round, outcome: RunOutcome): Promise<RoundEnd> {
  const { rt } = round.job;
  let { state } = outcome;
  // A cancel heard while the turn's reads ran: the pause it reached is cancelled, not posted.
  const type = outcome.type === 'interruption' && round.cancelRequested() ? 'cancel_requested' : outcome.type;
  if (type === 'yielded') return handedBack(round, state);
  if (type === 'cancel_requested') state = await cancelled(round, state);
  // Calls a rule or grant decided (or all of them) are applied at once, through the ledger.
  if (type === 'interruption' && (await postedPause(round, state))) return 'decided';
  // A budget ask answered already (a click a crash left unapplied) is applied at once.
  if (type === 'budget_ask' && (await postedBudgetAsk(round, state))) return 'decided';
  if (isFinished(state)) return delivered(await deliverEnd(rt, state, round.ctx, null, round.surface));
  return { type: 'done' };
}

/** The run ends cancelled: by whoever asked, its approval cards and budget ask closed. */
async function cancelled(round: Round, state: RunState): Promise<RunState> {
  const { rt, runId } = round.job;
  const by = round.loaded.cancelRequest?.by ?? (await rt.store.runs.loadRun(runId))?.cancelRequest?.by;
  const ended = cancelRun(state, round.deps, by);
  await round.deps.checkpoint!(ended);
  await cancelApprovalCards(rt, ended, by ?? 'loopgate');
  await cancelBudgetAsk(rt, state, by ?? 'loopgate');
  return ended;
}

/** Posts the pause and starts its children; true when some of its calls were decided as they were stored. */
async function postedPause({ job, ctx, surface, childSlack }: Round, state: RunState): Promise<boolean> {
  const { rt, lease, log } = job;
  // The stream stops before any card is posted: a card never lands inside a streaming message.
  await surface?.pause(state);
  const { decided } = await postPause(rt, state, ctx, lease.fence);
  await startChildren(rt, state, childSlack(), log);
  await rt.notifier.flush(ctx);
  return decided;
}

/** Posts the budget ask; true when it was answered already. */
async function postedBudgetAsk({ job, ctx, surface }: Round, state: RunState): Promise<boolean> {
  await surface?.pause(state);
  const decided = await postBudgetAsk(job.rt, state, ctx);
  await job.rt.notifier.flush(ctx);
  return decided !== null;
}

/** The job stops at the step boundary and its run goes back to the queue, for this or another worker. */
async function handedBack({ job, surface }: Round, state: RunState): Promise<AdvanceResult> {
  const { rt, log } = job;
  await surface?.interrupt();
  log.info(
    { step: state.step, stopping: rt.stopping() },
    rt.stopping()
      ? 'shutting down: the run is handed back to the queue'
      : 'the run lease may have passed to another job: the run is handed back to the queue',
  );
  return { type: 'busy', retryInMs: 0 };
}

/** An answer left for later (no Slack slot in time) brings its job back after a while. */
function delivered(outcome: 'delivered' | 'deferred'): AdvanceResult {
  return outcome === 'deferred' ? { type: 'busy', retryInMs: UNDELIVERED_RETRY_MS } : { type: 'done' };
}

/** The run's ports with the tools its channel does not allow withheld (src/worker/channel-scope.ts). */
function withChannel<P extends { tools: EngineDeps['tools'] }>(
  ports: P,
  scope: Parameters<typeof channelTools>[1],
): P & Pick<EngineDeps, 'withheld'> {
  const { tools, withheld } = channelTools(ports.tools, scope);
  return { ...ports, tools, ...(withheld ? { withheld } : {}) };
}
