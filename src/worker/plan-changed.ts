/**
 * Asking again for calls whose plan changed between approval and execution (src/loop/plan.ts). The
 * engine left such a call pending with the plan current at execution; here its approved round is
 * superseded by a fresh round showing that plan (the old decisions void), the card is redrawn in place
 * with the difference, and the new round gets its timers.
 */
import type { CallPlan } from '../loop/gated-calls.js';
import type { RunState } from '../loop/run-state.js';
import type { ToolResult } from '../loop/tool-result.js';
import { addApprovalTimers } from '../queue/approval-timers.js';
import { approvalViewFromRecord } from '../slack/approval-view.js';
import type { ApprovalRecord } from '../store/records.js';
import type { WorkerRuntime } from './runtime.js';

const samePlanShown = (a: CallPlan | undefined, b: CallPlan) => a?.ok === true && b.ok && a.hash === b.hash;

/**
 * For each call still pending in `state` whose latest round (`rounds`, read with the run) is approved
 * under another plan than the call's current one: the next round, asked again. Safe to repeat: a round
 * made already is returned as it is.
 */
export async function askAgainForChangedPlans(
  rt: WorkerRuntime,
  state: RunState,
  rounds: readonly ApprovalRecord[],
): Promise<ApprovalRecord[]> {
  const byCall = new Map(rounds.map((r) => [r.toolCallId, r]));
  const asked: ApprovalRecord[] = [];
  for (const call of state.turn?.pending ?? []) {
    const record = byCall.get(call.toolCallId);
    if (record?.status !== 'approved' || !call.plan || samePlanShown(record.plan, call.plan)) continue;
    const now = rt.clock.now();
    const next = await rt.store.approvals.askAgainForPlan(record, call.plan, now);
    await addApprovalTimers(rt.queue, next, now, rt.policy.oncallWatchMs);
    if (next.card)
      await rt.notifier.updateCard({ runId: state.runId }, next.card, approvalViewFromRecord(next));
    rt.logger.info(
      { runId: state.runId, toolCallId: call.toolCallId, approvalId: next.approvalId },
      'plan changed before execution: asked again',
    );
    asked.push(next);
  }
  return asked;
}

/**
 * Approved calls the plan check blocked in this job (their plan failed or timed out before they ran):
 * their cards say so, with the reason, in place of a silent "Approved".
 */
export async function showBlockedPlans(
  rt: WorkerRuntime,
  before: RunState,
  after: RunState,
  approvalIdOf: (call: { toolCallId: string }) => string,
): Promise<void> {
  for (const action of after.actions.slice(before.actions.length)) {
    if (action.outcome !== 'not_executed') continue;
    const approvalId = approvalIdOf(action);
    const entry = await rt.store.ledger.get(approvalId);
    if (entry?.status !== 'plan_blocked' || !entry.result) continue;
    const record = await rt.store.approvals.get(approvalId);
    if (record?.card) {
      const view = approvalViewFromRecord(record, undefined, blockedText(entry.result));
      await rt.notifier.updateCard({ runId: after.runId }, record.card, view);
    }
  }
}

const blockedText = (result: ToolResult) =>
  result.ok
    ? 'Not run.'
    : result.error.message.replace(/ It will not run later\..*$/s, ' It will not run later.');
