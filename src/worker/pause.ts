import type { ActionRecord, GatedCall } from '../loop/gated-calls.js';
import type { RunState } from '../loop/run-state.js';
import { withChannelApprovers } from '../policy/channel-rules.js';
import { addApprovalTimers } from '../queue/approval-timers.js';
import { approvalViewFromRecord, approvalViewNow } from '../slack/approval-view.js';
import type { RunSlackContext } from '../slack/notifier-port.js';
import type { NewApproval } from '../store/approvals/approval-store.js';
import { approvalIdFor } from '../store/ids.js';
import { gateOf, grantFor, planApproval, planShadow } from './approval-plan.js';
import { runChannelScope } from './channel-scope.js';
import type { WorkerRuntime } from './runtime.js';

/**
 * The approval to store for one gated call of a pause: in shadow mode (src/config/shadow-mode.ts) closed
 * at once as not executed (a deny rule still denies), else as the policy decides it, a covering grant
 * approving it.
 */
export async function planPauseCall(
  rt: WorkerRuntime,
  ctx: RunSlackContext,
  run: { runId: string; requester: string },
  call: GatedCall,
  now: number,
): Promise<NewApproval> {
  const decision = withChannelApprovers(gateOf(rt.policy, call), await runChannelScope(rt, ctx));
  const shadow = rt.policy.shadow?.(call.tool, ctx.channelId) ?? null;
  if (shadow !== null) return planShadow(rt, call, decision, shadow, now);
  return planApproval(rt, call, decision, now, await grantFor(rt, ctx, run, call, decision, now));
}

/**
 * Makes a pause visible and durable: one approval record per gated call, as the policy decides it (asked
 * of whom, how many, until when; or allowed or denied by a rule, or approved by a grant: those are decided
 * as they are stored, get no card and no timers), one card per asked call in the thread, and delayed jobs
 * as its timers (expiry, reminders, escalation). Idempotent: a recovered job finds the records, posts only
 * cards that are missing and re-adds timers by their ids. Returns whether a call of the pause is decided
 * already (by a rule or a grant, or by a click a crash left unapplied): the caller applies it at once.
 */
export async function postPause(
  rt: WorkerRuntime,
  state: RunState,
  ctx: RunSlackContext,
  fence: number,
): Promise<{ decided: boolean }> {
  const pending = state.turn?.pending ?? [];
  if (pending.length === 0) return { decided: false };
  const now = rt.clock.now();
  const run = { runId: state.runId, requester: state.requester.userId };
  const approvals = await Promise.all(pending.map((call) => planPauseCall(rt, ctx, run, call, now)));
  const records = await rt.store.approvals.createApprovals({
    runId: state.runId,
    fence,
    requester: state.requester.userId,
    ...(state.agent ? { agent: state.agent.name } : {}),
    now,
    approvals,
  });
  for (const record of records) {
    // A shadow call is closed already (it never runs) but still gets its card, marked as such.
    if (record.via === 'shadow' && !record.card) {
      const card = await rt.notifier.approvalCard(ctx, approvalViewFromRecord(record));
      await rt.store.approvals.setCard(record.approvalId, card);
      continue;
    }
    if (record.status !== 'pending') continue;
    await addApprovalTimers(rt.queue, record, now, rt.policy.oncallWatchMs);
    if (record.card) continue;
    // Throws when Slack refuses: the job is retried, since nobody can decide on a card that is not there.
    const card = await rt.notifier.approvalCard(ctx, await approvalViewNow(record, rt));
    await rt.store.approvals.setCard(record.approvalId, card);
  }
  return { decided: records.some((r) => r.status === 'approved' || r.status === 'rejected') };
}

/**
 * Whether an approved call's card should offer to run it again: its outcome is unknown (a crash); it was
 * not started because no replica confirmed its `executing` record; or it failed transiently and was not
 * repeated because it is not idempotent (its ledger result says so).
 */
export async function againStatusOf(
  rt: WorkerRuntime,
  approvalId: string,
  outcome: ActionRecord['outcome'],
): Promise<'outcome_unknown' | 'not_run' | 'failed_retryable' | null> {
  if (outcome === 'outcome_unknown') return 'outcome_unknown';
  if (outcome !== 'failed' && outcome !== 'not_executed') return null;
  const entry = await rt.store.ledger.get(approvalId);
  if (entry?.status === 'not_started') return 'not_run';
  const result = outcome === 'failed' && entry?.status === 'failed' ? entry.result : null;
  return result && !result.ok && result.error.transient === true ? 'failed_retryable' : null;
}

/**
 * Approved calls that a crash left with an unknown outcome, that were not started (no replica confirmed
 * them), or that failed transiently and were not repeated: their cards say so and offer to run them
 * again ("Approve again", "Retry").
 */
export async function markUnknownOutcomes(
  rt: WorkerRuntime,
  before: RunState,
  after: RunState,
  approvalIdOf: (call: { toolCallId: string }) => string = (c) => approvalIdFor(after.runId, c.toolCallId),
) {
  for (const action of after.actions.slice(before.actions.length)) {
    const approvalId = approvalIdOf(action);
    const status = await againStatusOf(rt, approvalId, action.outcome);
    if (!status) continue;
    const record = await rt.store.approvals.get(approvalId);
    if (record?.card) {
      await rt.notifier.updateCard(
        { runId: after.runId },
        record.card,
        approvalViewFromRecord(record, status),
      );
    }
  }
}

/** A cancelled run's undecided approvals are cancelled and their cards lose their buttons. */
export async function cancelApprovalCards(rt: WorkerRuntime, state: RunState, by: string) {
  const cancelled = await rt.store.approvals.cancelPending(
    state.runId,
    by,
    'the run was cancelled',
    rt.clock.now(),
  );
  for (const record of cancelled) {
    if (record.card)
      await rt.notifier.updateCard({ runId: state.runId }, record.card, approvalViewFromRecord(record));
  }
}
