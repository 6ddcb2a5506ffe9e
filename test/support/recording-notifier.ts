import type { ApprovalView } from '../../src/slack/approval-card.js';
import type { BudgetCardView } from '../../src/slack/budget-card.js';
import type {
  FinalAnswer,
  Notifier,
  PostedMessage,
  ReactionPhase,
  RunRef,
  RunSlackContext,
} from '../../src/slack/notifier-port.js';

export type NotifierCall =
  | { type: 'progress'; runId: string; text: string; placeholderTs?: string }
  | { type: 'card'; runId: string; view: ApprovalView; posted: PostedMessage }
  | { type: 'update_card'; runId: string; card: PostedMessage; view: ApprovalView }
  | { type: 'budget_card'; runId: string; view: BudgetCardView; posted: PostedMessage }
  | { type: 'update_budget_card'; runId: string; card: PostedMessage; view: BudgetCardView }
  | { type: 'final'; runId: string; answer: FinalAnswer }
  | { type: 'error'; runId: string; text: string }
  | { type: 'note'; runId: string; text: string }
  | { type: 'reaction'; runId: string; phase: ReactionPhase };

/** A Notifier that records what the worker would have shown in Slack. */
export class RecordingNotifier implements Notifier {
  readonly calls: NotifierCall[] = [];
  private ts = 1_000;
  /** Make the next N approval cards fail, as Slack would when down. */
  failCards = 0;

  of<T extends NotifierCall['type']>(type: T): Extract<NotifierCall, { type: T }>[] {
    return this.calls.filter((c): c is Extract<NotifierCall, { type: T }> => c.type === type);
  }

  /** Placeholders "posted" by progress, by run id: a run's first progress posts one. */
  private readonly placeholders = new Map<string, string>();

  async progress(ctx: RunSlackContext, text: string) {
    const ts = ctx.placeholderTs ?? this.placeholders.get(ctx.runId) ?? `${this.ts++}.000050`;
    this.placeholders.set(ctx.runId, ts);
    this.calls.push({ type: 'progress', runId: ctx.runId, text, placeholderTs: ts });
  }
  async flush() {}
  placeholderOf(runId: string) {
    return this.placeholders.get(runId);
  }
  async approvalCard(ctx: RunSlackContext, view: ApprovalView) {
    if (this.failCards > 0) {
      this.failCards--;
      throw new Error('slack is down');
    }
    const posted = { channel: ctx.channelId, ts: `${this.ts++}.000100` };
    this.calls.push({ type: 'card', runId: ctx.runId, view, posted });
    return posted;
  }
  async updateCard(ref: RunRef, card: PostedMessage, view: ApprovalView) {
    this.calls.push({ type: 'update_card', runId: ref.runId, card, view });
    return true;
  }
  async budgetCard(ctx: RunSlackContext, view: BudgetCardView) {
    const posted = { channel: ctx.channelId, ts: `${this.ts++}.000100` };
    this.calls.push({ type: 'budget_card', runId: ctx.runId, view, posted });
    return posted;
  }
  async updateBudgetCard(ref: RunRef, card: PostedMessage, view: BudgetCardView) {
    this.calls.push({ type: 'update_budget_card', runId: ref.runId, card, view });
    return true;
  }
  async finalAnswer(ctx: RunSlackContext, answer: FinalAnswer) {
    this.calls.push({ type: 'final', runId: ctx.runId, answer });
    return `${this.ts++}.000200`;
  }
  async note(ctx: RunSlackContext, text: string) {
    this.calls.push({ type: 'note', runId: ctx.runId, text });
    return true;
  }
  async error(ctx: RunSlackContext, text: string) {
    this.calls.push({ type: 'error', runId: ctx.runId, text });
  }
  async reaction(ctx: RunSlackContext, phase: ReactionPhase) {
    this.calls.push({ type: 'reaction', runId: ctx.runId, phase });
  }
}
