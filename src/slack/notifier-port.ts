/**
 * What the worker tells Slack about a run. The worker depends on this interface; SlackNotifier implements
 * it over the Web API and tests can pass a recording fake.
 */
import type { StopReason } from '../loop/run-status.js';
import type { ApprovalView } from './approval-card.js';
import type { BudgetCardView } from './budget-card.js';

/**
 * Where a run lives in Slack: the store's SlackContext (src/store/records.ts) plus the run id, so the
 * worker passes `{ runId, ...run.slack }`.
 */
export interface RunSlackContext {
  runId: string;
  teamId?: string;
  channelId: string;
  /** The thread the run answers in (the question's own ts when it started a thread). */
  threadTs: string;
  /** The message that asked; reactions go on it. */
  requestMessageTs: string;
  /**
   * The placeholder posted for this run by an earlier job (stored with the run), so a resumed run in
   * another process edits it instead of posting a second one.
   */
  placeholderTs?: string;
}

/** Only the run id, for calls that may come from the bot without the whole context (card updates). */
export type RunRef = Pick<RunSlackContext, 'runId'>;

export interface PostedMessage {
  channel: string;
  ts: string;
}

export interface FinalAnswer {
  /** The accepted answer in parts (RunState.answer); empty when the run ended without one. */
  parts: readonly string[];
  stopReason: StopReason | null;
  stopMessage?: string | null;
}

export type ReactionPhase = 'working' | 'done' | 'failed';

/**
 * Contract: only `approvalCard` and `budgetCard` throw (a SlackCallError: no card exists, the caller must not wait for a
 * click on it), and `finalAnswer` when the shared rate budget gave it no slot within its wait
 * (SlackBudgetExhausted: nothing of the answer was posted; the caller keeps it and tries later). Every
 * other method logs Slack failures with the run id and resolves.
 */
export interface Notifier {
  /**
   * Shows `text` as the run's current step: posts the placeholder on first use, then edits it in place at
   * most once per interval; the latest text wins, intermediate ones may be skipped. Never rejects. The
   * first call resolves once the placeholder is posted (Slack's retries included); later calls at once.
   */
  progress(ctx: RunSlackContext, text: string): Promise<void>;
  /** Sends any progress text still waiting for the interval (e.g. before a job ends at a pause). */
  flush(ctx: RunSlackContext): Promise<void>;
  /** The placeholder's ts once one was posted for the run, to store with the run. */
  placeholderOf(runId: string): string | undefined;
  approvalCard(ctx: RunSlackContext, view: ApprovalView): Promise<PostedMessage>;
  /** Replaces a card in place; false when Slack refused (logged). */
  updateCard(ref: RunRef, card: PostedMessage, view: ApprovalView): Promise<boolean>;
  /** Posts a run's ask for more budget (throws like `approvalCard`: nobody can click a card not there). */
  budgetCard(ctx: RunSlackContext, view: BudgetCardView): Promise<PostedMessage>;
  /** Replaces a budget card in place; false when Slack refused (logged). */
  updateBudgetCard(ref: RunRef, card: PostedMessage, view: BudgetCardView): Promise<boolean>;
  /**
   * Posts the answer (several messages when long), then removes the placeholder. Returns the first
   * message's ts, or null when posting failed (logged). Rejects with SlackBudgetExhausted when no slot
   * came for its first message in time.
   */
  finalAnswer(ctx: RunSlackContext, answer: FinalAnswer): Promise<string | null>;
  /**
   * Posts `text` (Slack mrkdwn, escaped by the caller) in the run's thread, leaving any placeholder alone:
   * for news that is not the run's answer (a call approved again ran). Returns false when Slack refused
   * (logged).
   */
  note(ctx: RunSlackContext, text: string): Promise<boolean>;
  /** Posts an error note in the thread and removes the placeholder. */
  error(ctx: RunSlackContext, text: string): Promise<void>;
  /** working: 👀 on the question; done: ✅ instead; failed: ❌ instead. */
  reaction(ctx: RunSlackContext, phase: ReactionPhase): Promise<void>;
}
