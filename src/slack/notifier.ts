/**
 * The Slack side of a run, over the Web API: a placeholder edited in place while it works, reactions on
 * the question, approval cards, the final answer. Slack failures (after the WebClient's own retries, which
 * honour Retry-After) are logged with the run id and swallowed, except when posting an approval card.
 *
 * With a rate budget (src/slack/rate), every call waits for its slot: cards and their updates first,
 * then answers and notes, while the placeholder and reactions are decorations (coalesced per run, or
 * dropped under pressure; a placeholder is not posted when the channel has no slot free).
 */
import type { webApi } from '@slack/bolt';
import type { Logger } from '../loop/tool-contract.js';
import { type ApprovalView, approvalCard } from './approval-card.js';
import type { SlackMessage } from './block-kit.js';
import { type BudgetCardView, budgetCard } from './budget-card.js';
import { SlackCallError, slackErrorCode } from './errors.js';
import { finalAnswerMessages } from './final-answer.js';
import { SLACK_LIMITS } from './limits.js';
import { escapeAndTruncate, truncate } from './mrkdwn.js';
import type {
  FinalAnswer,
  Notifier,
  PostedMessage,
  ReactionPhase,
  RunRef,
  RunSlackContext,
} from './notifier-port.js';
import { Placeholders } from './placeholder.js';
import { placeholderMessage } from './progress.js';
import type { BudgetedCall, SlackBudget } from './rate/slack-budget.js';

interface SlackNotifierOptions {
  /** A client from createSlackWebClient (bounded retries, Retry-After honoured). */
  client: webApi.WebClient;
  logger: Logger;
  /** Least time between two edits of one run's placeholder. Default 1,200 ms. */
  progressIntervalMs?: number;
  /** Reaction names (without colons). Default eyes, white_check_mark, x. */
  reactions?: Partial<Record<ReactionPhase, string>>;
  /** Placeholders remembered in memory at once. Default 10,000. */
  maxTrackedRuns?: number;
  /** The installation's shared Slack rate budget; without it calls go out at once. */
  budget?: SlackBudget;
}

const DEFAULT_REACTIONS: Record<ReactionPhase, string> = {
  working: 'eyes',
  done: 'white_check_mark',
  failed: 'x',
};

/** Reaction errors that mean the reaction is already as wanted. */
const HARMLESS_REACTION_ERRORS = new Set(['already_reacted', 'no_reaction']);

export class SlackNotifier implements Notifier {
  private readonly client: webApi.WebClient;
  private readonly logger: Logger;
  private readonly reactions: Record<ReactionPhase, string>;
  private readonly placeholders: Placeholders;
  private readonly budget: SlackBudget | undefined;

  constructor(opts: SlackNotifierOptions) {
    this.client = opts.client;
    this.budget = opts.budget;
    this.logger = opts.logger;
    this.reactions = { ...DEFAULT_REACTIONS, ...opts.reactions };
    this.placeholders = new Placeholders({
      logger: opts.logger,
      intervalMs: opts.progressIntervalMs ?? 1_200,
      maxRuns: opts.maxTrackedRuns ?? 10_000,
      transport: {
        post: async (ctx, text) => {
          // Decorative: no placeholder when the channel's posts are needed for answers and cards.
          const room = await this.roomNow({ method: 'chat.postMessage', channel: ctx.channelId });
          return room ? ((await this.postInThread(ctx, placeholderMessage(text)))?.ts ?? null) : null;
        },
        update: (ctx, ts, text) =>
          this.decorate(ctx, 'progress', { method: 'chat.update' }, () =>
            this.attempt(ctx, 'chat.update', () =>
              this.client.chat.update({ channel: ctx.channelId, ts, ...placeholderMessage(text) }),
            ),
          ),
        remove: async (ctx, ts) => {
          await this.attempt(ctx, 'chat.delete', () =>
            this.budgeted({ method: 'chat.delete', priority: 'answer' }, () =>
              this.client.chat.delete({ channel: ctx.channelId, ts }),
            ),
          );
        },
      },
    });
  }

  progress(ctx: RunSlackContext, text: string): Promise<void> {
    return this.placeholders.show(ctx, text);
  }

  flush(ctx: RunSlackContext): Promise<void> {
    return this.placeholders.flush(ctx);
  }

  placeholderOf(runId: string): string | undefined {
    return this.placeholders.tsOf(runId);
  }

  approvalCard(ctx: RunSlackContext, view: ApprovalView): Promise<PostedMessage> {
    return this.postCard(
      ctx,
      approvalCard(view),
      { approvalId: view.approvalId },
      'approval card not posted',
    );
  }

  async updateCard(ref: RunRef, card: PostedMessage, view: ApprovalView): Promise<boolean> {
    return this.replaceCard(ref, card, approvalCard(view));
  }

  budgetCard(ctx: RunSlackContext, view: BudgetCardView): Promise<PostedMessage> {
    return this.postCard(ctx, budgetCard(view), { round: view.round }, 'budget card not posted');
  }

  updateBudgetCard(ref: RunRef, card: PostedMessage, view: BudgetCardView): Promise<boolean> {
    return this.replaceCard(ref, card, budgetCard(view));
  }

  /** Posts a card in the run's thread with a card's priority; throws a SlackCallError when Slack refuses. */
  private async postCard(
    ctx: RunSlackContext,
    message: SlackMessage,
    fields: Record<string, unknown>,
    failure: string,
  ): Promise<PostedMessage> {
    try {
      const res = await this.budgeted(
        { method: 'chat.postMessage', channel: ctx.channelId, priority: 'card' },
        () =>
          this.client.chat.postMessage({
            channel: ctx.channelId,
            thread_ts: ctx.threadTs,
            ...message,
            unfurl_links: false,
            unfurl_media: false,
          }),
      );
      if (!res.ts) throw new Error('chat.postMessage returned no ts');
      return { channel: res.channel ?? ctx.channelId, ts: res.ts };
    } catch (err) {
      const code = slackErrorCode(err);
      this.logger.error(
        { runId: ctx.runId, ...fields, method: 'chat.postMessage', slackError: code, err },
        failure,
      );
      throw new SlackCallError('chat.postMessage', code, { cause: err });
    }
  }

  private async replaceCard(ref: RunRef, card: PostedMessage, message: SlackMessage): Promise<boolean> {
    const res = await this.attempt(ref, 'chat.update', () =>
      this.budgeted({ method: 'chat.update', priority: 'card' }, () =>
        this.client.chat.update({ channel: card.channel, ts: card.ts, ...message }),
      ),
    );
    return res !== null;
  }

  async finalAnswer(ctx: RunSlackContext, answer: FinalAnswer): Promise<string | null> {
    // Progress text still waiting is stale now: it must not land after the answer.
    await this.placeholders.silence(ctx);
    let first: string | null = null;
    for (const message of finalAnswerMessages({ runId: ctx.runId, ...answer })) {
      // No slot within the answer's wait: nothing of it is posted and the caller keeps it for later.
      if (first === null) await this.waitForAnswerSlot(ctx);
      const posted = await this.postInThread(ctx, message, first === null ? 'prepaid' : 'answer');
      // A missing part would make the rest misleading: stop, the failure is logged.
      if (!posted) break;
      first ??= posted.ts;
    }
    await this.placeholders.end(ctx);
    return first;
  }

  async note(ctx: RunSlackContext, text: string): Promise<boolean> {
    const line = truncate(text, SLACK_LIMITS.sectionText);
    const posted = await this.postInThread(ctx, {
      text: line,
      blocks: [{ type: 'section', text: { type: 'mrkdwn', text: line } }],
    });
    return posted !== null;
  }

  async error(ctx: RunSlackContext, text: string): Promise<void> {
    await this.placeholders.silence(ctx);
    const line = `:warning: ${escapeAndTruncate(text, 2_900)}`;
    await this.postInThread(ctx, {
      text: line,
      blocks: [{ type: 'section', text: { type: 'mrkdwn', text: line } }],
    });
    await this.placeholders.end(ctx);
  }

  async reaction(ctx: RunSlackContext, phase: ReactionPhase): Promise<void> {
    const target = { channel: ctx.channelId, timestamp: ctx.requestMessageTs };
    if (phase !== 'working') {
      await this.decorate(ctx, 'reaction-remove', { method: 'reactions.remove' }, () =>
        this.attempt(ctx, 'reactions.remove', () =>
          this.client.reactions.remove({ ...target, name: this.reactions.working }),
        ),
      );
    }
    const name = this.reactions[phase];
    await this.decorate(ctx, 'reaction', { method: 'reactions.add' }, () =>
      this.attempt(ctx, 'reactions.add', () => this.client.reactions.add({ ...target, name })),
    );
  }

  /**
   * Posts in the run's thread with an answer's priority (`prepaid`: its slot was taken already).
   * A post that found no slot in time is logged like a Slack failure (null).
   */
  private postInThread(
    ctx: RunSlackContext,
    message: SlackMessage,
    slot: 'answer' | 'prepaid' = 'answer',
  ): Promise<PostedMessage | null> {
    return this.attempt(ctx, 'chat.postMessage', async () => {
      const post = () =>
        this.client.chat.postMessage({
          channel: ctx.channelId,
          thread_ts: ctx.threadTs,
          ...message,
          unfurl_links: false,
          unfurl_media: false,
        });
      const res =
        slot === 'prepaid'
          ? await post()
          : await this.budgeted(
              { method: 'chat.postMessage', channel: ctx.channelId, priority: 'answer' },
              post,
            );
      return { channel: res.channel ?? ctx.channelId, ts: res.ts ?? '' };
    });
  }

  /** Waits in line for the answer's first post; rejects with SlackBudgetExhausted when none came. */
  private async waitForAnswerSlot(ctx: RunSlackContext): Promise<void> {
    await this.budgeted(
      { method: 'chat.postMessage', channel: ctx.channelId, priority: 'answer' },
      async () => undefined,
    );
  }

  private budgeted<T>(spec: BudgetedCall, call: () => Promise<T>): Promise<T> {
    return this.budget ? this.budget.call(spec, call) : call();
  }

  private async roomNow(spec: Omit<BudgetedCall, 'priority'>): Promise<boolean> {
    if (!this.budget) return true;
    return this.budget.tryNow({ ...spec, priority: 'decoration' }).catch(() => true);
  }

  /** A decoration of the run: the latest of `kind` per run is sent when the budget has room. */
  private async decorate(
    ctx: RunRef,
    kind: string,
    spec: Omit<BudgetedCall, 'priority'>,
    call: () => Promise<unknown>,
  ): Promise<void> {
    if (!this.budget) {
      await call();
      return;
    }
    await this.budget.decorate({ ...spec, key: `${ctx.runId} ${kind}`, runId: ctx.runId }, call);
  }

  /** Runs one Web API call; a failure is logged with the run id and becomes null. */
  private async attempt<T>(ref: RunRef, method: string, call: () => Promise<T>): Promise<T | null> {
    try {
      return await call();
    } catch (err) {
      const code = slackErrorCode(err);
      if (HARMLESS_REACTION_ERRORS.has(code)) return null;
      this.logger.warn({ runId: ref.runId, method, slackError: code, err }, 'slack call failed');
      return null;
    }
  }
}
