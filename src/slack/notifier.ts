/**
 * The Slack side of a run, over the Web API: a placeholder edited in place while it works, reactions on
 * the question, approval cards, the final answer. Slack failures (after the WebClient's own retries, which
 * honour Retry-After) are logged with the run id and swallowed, except when posting an approval card.
 */
import type { webApi } from '@slack/bolt';
import type { Logger } from '../loop/types.js';
import { type ApprovalView, approvalCard } from './approval-card.js';
import type { SlackMessage } from './block-kit.js';
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

export interface SlackNotifierOptions {
  /** A client from createSlackWebClient (bounded retries, Retry-After honoured). */
  client: webApi.WebClient;
  logger: Logger;
  /** Least time between two edits of one run's placeholder. Default 1,200 ms. */
  progressIntervalMs?: number;
  /** Reaction names (without colons). Default eyes, white_check_mark, x. */
  reactions?: Partial<Record<ReactionPhase, string>>;
  /** Placeholders remembered in memory at once. Default 10,000. */
  maxTrackedRuns?: number;
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

  constructor(opts: SlackNotifierOptions) {
    this.client = opts.client;
    this.logger = opts.logger;
    this.reactions = { ...DEFAULT_REACTIONS, ...opts.reactions };
    this.placeholders = new Placeholders({
      logger: opts.logger,
      intervalMs: opts.progressIntervalMs ?? 1_200,
      maxRuns: opts.maxTrackedRuns ?? 10_000,
      transport: {
        post: async (ctx, text) => (await this.postInThread(ctx, placeholderMessage(text)))?.ts ?? null,
        update: async (ctx, ts, text) => {
          await this.attempt(ctx, 'chat.update', () =>
            this.client.chat.update({ channel: ctx.channelId, ts, ...placeholderMessage(text) }),
          );
        },
        remove: async (ctx, ts) => {
          await this.attempt(ctx, 'chat.delete', () =>
            this.client.chat.delete({ channel: ctx.channelId, ts }),
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

  async approvalCard(ctx: RunSlackContext, view: ApprovalView): Promise<PostedMessage> {
    const message = approvalCard(view);
    try {
      const res = await this.client.chat.postMessage({
        channel: ctx.channelId,
        thread_ts: ctx.threadTs,
        ...message,
        unfurl_links: false,
        unfurl_media: false,
      });
      if (!res.ts) throw new Error('chat.postMessage returned no ts');
      return { channel: res.channel ?? ctx.channelId, ts: res.ts };
    } catch (err) {
      const code = slackErrorCode(err);
      this.logger.error(
        { runId: ctx.runId, approvalId: view.approvalId, method: 'chat.postMessage', slackError: code, err },
        'approval card not posted',
      );
      throw new SlackCallError('chat.postMessage', code, { cause: err });
    }
  }

  async updateCard(ref: RunRef, card: PostedMessage, view: ApprovalView): Promise<boolean> {
    const res = await this.attempt(ref, 'chat.update', () =>
      this.client.chat.update({ channel: card.channel, ts: card.ts, ...approvalCard(view) }),
    );
    return res !== null;
  }

  async finalAnswer(ctx: RunSlackContext, answer: FinalAnswer): Promise<string | null> {
    // Progress text still waiting is stale now: it must not land after the answer.
    await this.placeholders.silence(ctx);
    let first: string | null = null;
    for (const message of finalAnswerMessages({ runId: ctx.runId, ...answer })) {
      const posted = await this.postInThread(ctx, message);
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
      await this.attempt(ctx, 'reactions.remove', () =>
        this.client.reactions.remove({ ...target, name: this.reactions.working }),
      );
    }
    const name = this.reactions[phase];
    await this.attempt(ctx, 'reactions.add', () => this.client.reactions.add({ ...target, name }));
  }

  private postInThread(ctx: RunSlackContext, message: SlackMessage): Promise<PostedMessage | null> {
    return this.attempt(ctx, 'chat.postMessage', async () => {
      const res = await this.client.chat.postMessage({
        channel: ctx.channelId,
        thread_ts: ctx.threadTs,
        ...message,
        unfurl_links: false,
        unfurl_media: false,
      });
      return { channel: res.channel ?? ctx.channelId, ts: res.ts ?? '' };
    });
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
