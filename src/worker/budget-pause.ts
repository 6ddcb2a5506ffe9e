/**
 * The worker's side of a run's ask for more budget (src/loop/budget-extension.ts): the ask is stored as
 * a record of its own (src/store/budget/budget-ask-store.ts), its card posted in the thread, and its expiry put
 * in the queue as a delayed job; the job then ends and the run waits in Redis. A click (the bot) or the
 * timer answers the record once; the next job of the run applies that answer.
 */
import type { BudgetDecision } from '../loop/budget-asks.js';
import type { RunState } from '../loop/run-state.js';
import { addRunJob } from '../queue/runs-queue.js';
import { budgetCardView } from '../slack/budget-card.js';
import type { RunSlackContext } from '../slack/notifier-port.js';
import type { BudgetAskRecord } from '../store/budget/budget-ask-store.js';
import { StoreError } from '../store/errors.js';
import type { WorkerRuntime } from './runtime.js';

/** How long an ask waits when the runtime does not say (tests without a policy file). */
const DEFAULT_TTL_MS = 30 * 60_000;

/** Who may answer an ask, as the policy names them now. */
const decidersOf = (rt: WorkerRuntime, record: BudgetAskRecord): string[] =>
  rt.policy.budgetAsks?.deciders(record.reason, record.requester) ?? [record.requester];

/** The answer an ask record holds for the run's current ask, or null while there is none. */
export function budgetDecisionOf(state: RunState, record: BudgetAskRecord | null): BudgetDecision | null {
  const ask = state.budgetAsk;
  if (!ask || !record || record.round !== ask.round) return null;
  switch (record.status) {
    case 'pending':
      return null;
    case 'granted':
    case 'refused':
      return { round: ask.round, kind: record.status, by: record.decidedBy ?? '' };
    case 'expired':
    case 'cancelled':
      return { round: ask.round, kind: 'expired' };
  }
}

/**
 * Makes a budget ask visible and durable: its record, its expiry timer and its card. Idempotent: a
 * recovered job finds the record, re-adds the timer by its id and posts the card only when missing.
 * Returns the answer already recorded (a click a crash left unapplied), or null.
 */
export async function postBudgetAsk(
  rt: WorkerRuntime,
  state: RunState,
  ctx: RunSlackContext,
): Promise<BudgetDecision | null> {
  const ask = state.budgetAsk;
  if (!ask) return null;
  const ttlMs = rt.policy.budgetAsks?.ttlMs ?? DEFAULT_TTL_MS;
  const record = await rt.store.budgetAsks.create(state.runId, ask, state.requester.userId, ask.at + ttlMs);
  if (!record) return null;
  const decided = budgetDecisionOf(state, record);
  if (decided || record.status !== 'pending') return decided;
  const now = rt.clock.now();
  const data = { v: 1, runId: state.runId, round: record.round } as const;
  await addRunJob(rt.queue, { name: 'budget_expire', data }, record.expiresAt - now);
  if (record.cardTs) return null;
  // Throws when Slack refuses: the job is retried, since nobody can answer a card that is not there.
  const card = await rt.notifier.budgetCard(ctx, budgetCardView(record, decidersOf(rt, record)));
  await rt.store.budgetAsks.setCard(state.runId, record.round, card);
  return null;
}

/** Redraws an answered ask's card (without its buttons). */
export async function redrawBudgetCard(rt: WorkerRuntime, record: BudgetAskRecord): Promise<void> {
  if (!record.cardChannel || !record.cardTs) return;
  await rt.notifier.updateBudgetCard(
    { runId: record.runId },
    { channel: record.cardChannel, ts: record.cardTs },
    budgetCardView(record, decidersOf(rt, record)),
  );
}

/** A run cancelled while it asked for more budget: its ask is closed and its card loses its buttons. */
export async function cancelBudgetAsk(rt: WorkerRuntime, before: RunState, by: string): Promise<void> {
  const ask = before.budgetAsk;
  if (!ask) return;
  const answer = await rt.store.budgetAsks
    .decide({ runId: before.runId, round: ask.round, decision: 'cancelled', by, now: rt.clock.now() })
    // No ask stored (the run paused before a crash could store it) or another round: nothing to close.
    .catch((err: unknown) => {
      if (err instanceof StoreError) return null;
      throw err;
    });
  if (answer && answer.outcome !== 'unchanged') await redrawBudgetCard(rt, answer.record);
}
