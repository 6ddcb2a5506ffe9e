/**
 * What an approval round's timers do when they come due (src/queue/approval-timers.ts adds them): remind
 * the thread, add the round's escalation approvers, or look again at who is on call and redraw the card
 * when that changed. A timer acts only on the round it was made for: once
 * that round was edited, decided or expired it does nothing, so a rule's escalation never reaches a round
 * another rule asks for.
 */

import { createHash } from 'node:crypto';
import { approverMentions } from '../approvers/mentions.js';
import { type OncallShown, resolveOncall } from '../approvers/resolve.js';
import { addOncallWatch } from '../queue/approval-timers.js';
import type { EscalateJobData, OncallWatchJobData, RemindJobData } from '../queue/job-data.js';
import { approvalViewNow } from '../slack/approval-view.js';
import { slackDate } from '../slack/mrkdwn.js';
import type { ApprovalRecord } from '../store/records.js';
import { slackContextOf } from './advance.js';
import type { AdvanceResult } from './run-lease.js';
import type { WorkerRuntime } from './runtime.js';

/**
 * Who may still decide, as mentions: approvers who have not approved yet, the groups, and whoever is on
 * call now for each on-call source (or its fallback).
 */
function waitingOn(record: ApprovalRecord, shown: readonly OncallShown[]): string {
  const voted = new Set((record.votes ?? []).map((v) => v.by));
  const users = record.approvers.users.filter((u) => !voted.has(u));
  return approverMentions({ ...record.approvers, users }, shown).join(', ') || 'nobody';
}

/** The timer's own round while still pending, with its run's thread; null when there is nothing to do. */
async function pendingRound(rt: WorkerRuntime, approvalId: string, runId: string) {
  const record = await rt.store.approvals.get(approvalId);
  if (record?.status !== 'pending' || rt.clock.now() >= record.expiresAt) return null;
  const run = await rt.store.runs.loadRun(runId);
  return run ? { record, ctx: slackContextOf(run) } : null;
}

/** A reminder in the card's thread, mentioning who may still decide. */
export async function handleRemind(rt: WorkerRuntime, data: RemindJobData): Promise<AdvanceResult> {
  const found = await pendingRound(rt, data.approvalId, data.runId);
  if (!found) return { type: 'done' };
  const { record, ctx } = found;
  const shown = await resolveOncall(record.approvers, rt);
  const who = waitingOn(record, shown);
  const quorum = record.quorum ?? 1;
  const progress = quorum > 1 ? ` (${record.votes?.length ?? 0} of ${quorum} approvals so far)` : '';
  const text =
    `:alarm_clock: Reminder: \`${record.tool}\` is still waiting for a decision${progress}. ${who}: ` +
    `please approve or reject it on the card above; it expires ${slackDate(record.expiresAt)} and then does not run.`;
  const now = rt.clock.now();
  if (
    await rt.store.approvals.markReminded(record, data.percent, `reminded ${who} at ${data.percent}%`, now)
  ) {
    await rt.notifier.note(ctx, text);
    // The on-call may have changed since the card was drawn: the card names who is on call now.
    if (record.card && shown.length > 0) {
      await rt.notifier.updateCard(
        { runId: data.runId },
        record.card,
        await approvalViewNow(record, rt, shown),
      );
    }
  }
  return { type: 'done' };
}

/** Escalation: the escalation approvers are added to the approval (the card redrawn) and told. */
export async function handleEscalate(rt: WorkerRuntime, data: EscalateJobData): Promise<AdvanceResult> {
  const found = await pendingRound(rt, data.approvalId, data.runId);
  if (!found?.record.escalation) return { type: 'done' };
  const escalated = await rt.store.approvals.escalate(found.record.approvalId, rt.clock.now());
  if (!escalated?.changed) return { type: 'done' };
  const { record } = escalated;
  const to = found.record.escalation;
  // An escalation to the next on-call level names who is on call there now: where PagerDuty would page.
  const added = approverMentions(to.to, await resolveOncall(to.to, rt)).join(', ');
  if (record.card)
    await rt.notifier.updateCard({ runId: data.runId }, record.card, await approvalViewNow(record, rt));
  await rt.notifier.note(
    found.ctx,
    `:arrow_double_up: Escalated: nobody has decided on \`${record.tool}\` yet. ${added}: you may now approve or reject it too, on the card above; it expires ${slackDate(record.expiresAt)}.`,
  );
  return { type: 'done' };
}

/** A fingerprint of who a card shows on call (or which fallback decides, and why). */
const oncallFingerprint = (shown: readonly OncallShown[]): string =>
  createHash('sha256').update(JSON.stringify(shown)).digest('hex').slice(0, 16);

/**
 * A look at who is on call for a waiting round, every roster cache period while it waits: when the
 * on-call changed since the card was last drawn by this watch (or on its first look, since the card was
 * drawn), the card is redrawn with who is on call now. The roster is cached in Redis, so however many
 * cards wait, a provider is asked once per source per period.
 */
export async function handleOncallWatch(rt: WorkerRuntime, data: OncallWatchJobData): Promise<AdvanceResult> {
  const record = await rt.store.approvals.get(data.approvalId);
  if (record?.status !== 'pending' || rt.clock.now() >= record.expiresAt) return { type: 'done' };
  let shown = data.shown;
  if (record.approvers.oncall?.length) {
    const now = await resolveOncall(record.approvers, rt);
    const fingerprint = oncallFingerprint(now);
    if (fingerprint !== data.shown && record.card) {
      await rt.notifier.updateCard(
        { runId: data.runId },
        record.card,
        await approvalViewNow(record, rt, now),
      );
      rt.logger.info({ runId: data.runId, approvalId: data.approvalId }, 'on-call changed: card redrawn');
    }
    shown = fingerprint;
  }
  await addOncallWatch(
    rt.queue,
    record,
    { tick: data.tick + 1, ...(shown ? { shown } : {}) },
    rt.clock.now(),
    rt.policy.oncallWatchMs,
  );
  return { type: 'done' };
}
