/**
 * Sub-agents' runs in the worker. A parent that paused on sub-agent calls has its children created (each a
 * durable run of its own, with its own id, lease, ledger and approvals) and queued; a child that ended
 * hands over to its parent by a `child_end` job; the parent reads the ends from the store and applies them
 * (src/loop/delegate.ts), so a repeated, late or lost hand-over never fills a slot twice or leaves it
 * empty: every step is idempotent, and a delayed `child_end` check per child (`watch`) covers a lost job.
 */
import { outcomeOfChild } from '../loop/delegate.js';
import type { RunState } from '../loop/run-state.js';
import { isFinished } from '../loop/state.js';
import type { ChildOutcome } from '../loop/subagents.js';
import type { Logger } from '../loop/tool-contract.js';
import { addRunJob } from '../queue/runs-queue.js';
import type { SlackContext } from '../store/records.js';
import type { LoadedRun } from '../store/runs/run-store.js';
import type { WorkerRuntime } from '../worker/runtime.js';
import { DEFAULT_WATCH_MS } from './catalog.js';
import { newChildRun } from './child-run.js';
import { toolsOfAgent } from './run-ports.js';

const watchMsOf = (rt: WorkerRuntime) => rt.agents?.watchMs ?? DEFAULT_WATCH_MS;

/**
 * Makes sure every child the paused parent waits for exists and is queued, with its first safety check.
 * Idempotent: existing runs are kept, and jobs are added under ids that make repeats no-ops. The children
 * share the parent's Slack thread (their approval cards go there) and its placeholder (their progress).
 */
export async function startChildren(rt: WorkerRuntime, parent: RunState, slack: SlackContext, log: Logger) {
  const calls = parent.turn?.delegated ?? [];
  if (calls.length === 0) return;
  const now = rt.clock.now();
  await Promise.all(
    calls.map(async (call) => {
      const agent = rt.agents?.definitions.get(call.agent);
      const tools = agent ? [...toolsOfAgent(rt.tools, agent).keys()] : [];
      const child = newChildRun(parent, call, agent, tools, now);
      const { created } = await rt.store.runs.createRun(child, slack, { index: false });
      if (created) {
        log.info(
          { childRunId: call.childRunId, agent: call.agent, toolCallId: call.toolCallId },
          'sub-agent run created',
        );
      }
      await Promise.all([
        addRunJob(rt.queue, { name: 'child_start', data: { v: 1, runId: call.childRunId } }),
        addRunJob(
          rt.queue,
          { name: 'child_end', data: { v: 1, runId: parent.runId, childRunId: call.childRunId, watch: 1 } },
          watchMsOf(rt),
        ),
      ]);
    }),
  );
}

/** Child runs being loaded already (a hand-over job starts loading its child with the parent's lease). */
export type PrefetchedChildren = ReadonlyMap<string, Promise<LoadedRun | null>>;

/**
 * The ends of the children the paused parent waits for that have ended, read from the store (or from
 * `prefetched`: a child that ended stays as it is, so a load begun before the parent's is as good).
 */
export async function endedChildren(
  rt: WorkerRuntime,
  parent: RunState,
  prefetched?: PrefetchedChildren,
): Promise<ChildOutcome[]> {
  const calls = parent.turn?.delegated ?? [];
  if (calls.length === 0) return [];
  const children = await Promise.all(
    calls.map((call) => prefetched?.get(call.childRunId) ?? rt.store.runs.loadRun(call.childRunId)),
  );
  return calls.flatMap((call, i) => {
    const child = children[i];
    return child && isFinished(child.state) ? [outcomeOfChild(call.toolCallId, child.state)] : [];
  });
}

/**
 * A child run ended: its parent is asked (by a job, on any worker) to apply it. The end is already in
 * the store, so a lost or repeated job changes nothing but when the parent sees it; a recovered job of the
 * child asks again under the same job id, which BullMQ ignores.
 */
export async function handToParent(rt: WorkerRuntime, child: RunState) {
  const link = child.agent;
  if (!link) return;
  await addRunJob(rt.queue, {
    name: 'child_end',
    data: { v: 1, runId: link.parentRunId, childRunId: child.runId },
  });
}

/**
 * After a `child_end` safety check: while the parent still waits for that child, the next check is
 * scheduled. (The check itself is the parent's advance, which applies whatever ended.)
 */
export async function scheduleNextWatch(
  rt: WorkerRuntime,
  parentRunId: string,
  childRunId: string,
  watch: number,
) {
  const parent = await rt.store.runs.loadRun(parentRunId);
  const waiting = parent?.state.turn?.delegated?.some((d) => d.childRunId === childRunId) ?? false;
  if (!waiting) return;
  await addRunJob(
    rt.queue,
    { name: 'child_end', data: { v: 1, runId: parentRunId, childRunId, watch: watch + 1 } },
    watchMsOf(rt),
  );
}

/**
 * Cancels the children a finished run left working (its `abandoned` sub-agent calls): each is asked to
 * stop (its pending approvals are cancelled and their cards say so) like a run cancelled by a person, in
 * the name of whoever cancelled the parent. Idempotent; children that ended already are left alone.
 */
export async function cancelAbandonedChildren(rt: WorkerRuntime, state: RunState, by?: string) {
  const abandoned = (state.subagents ?? []).filter((s) => s.outcome === 'abandoned');
  if (abandoned.length === 0) return;
  const children = await Promise.all(abandoned.map((s) => rt.store.runs.loadRun(s.childRunId)));
  const working = children.filter((c) => c !== null && !isFinished(c.state));
  if (working.length === 0) return;
  const who = by ?? (await rt.store.runs.loadRun(state.runId))?.cancelRequest?.by ?? 'loopgate';
  await Promise.all(
    working.map(async (child) => {
      const runId = child!.state.runId;
      if (!child!.cancelRequest) await rt.store.runs.requestCancel(runId, { by: who, at: rt.clock.now() });
      await addRunJob(rt.queue, { name: 'cancel', data: { v: 1, runId, by: who } });
    }),
  );
}
