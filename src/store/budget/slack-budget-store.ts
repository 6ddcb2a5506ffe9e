import type { StoreContext } from '../context.js';

/** How one Slack rate budget is shaped: the steady rate and the burst above it. */
export interface BudgetShape {
  /** ms between two calls at the steady rate. */
  intervalMs: number;
  /** Calls tolerated at once above the steady rate. */
  burst: number;
}

export interface SlotRequest extends BudgetShape {
  /** Slots of the burst to leave free for others (decorations and stream starts leave some). */
  headroom: number;
  /** The caller's id while it waits in line; null for a caller that takes a slot now or not at all. */
  member: string | null;
  /** Place in line: lower goes first (priority, then arrival). */
  rank: number;
  /** How far ahead a slot may be granted (the caller sleeps until it). */
  horizonMs: number;
  /** A waiting caller that has not asked again for this long has left the line. */
  staleMs: number;
}

export type SlotVerdict = { granted: true; waitMs: number } | { granted: false; nextInMs: number };

/**
 * Slack rate budgets in Redis, shared by every worker and bot of one installation (takeSlackSlot-3.lua,
 * pauseSlackBudget-1.lua). A budget is named by its parts: the workspace, the method and, for posts,
 * the channel.
 */
export class SlackBudgetStore {
  constructor(private readonly ctx: StoreContext) {}

  async take(parts: readonly string[], req: SlotRequest): Promise<SlotVerdict> {
    const keys = this.ctx.keys.slackBudget(parts.map(orUnderscore));
    const reply = (await this.ctx.script(
      'takeSlackSlot',
      [keys.tat, keys.queue, keys.seen],
      [
        Math.ceil(req.intervalMs),
        req.burst,
        req.headroom,
        req.member ?? '',
        req.rank,
        req.horizonMs,
        req.staleMs,
      ],
    )) as [number, number];
    const [granted, waitMs] = [Number(reply[0]), Number(reply[1])];
    return granted === 1 ? { granted: true, waitMs } : { granted: false, nextInMs: waitMs };
  }

  /** A waiting caller gives up its place in line (it stopped waiting). */
  async leave(parts: readonly string[], member: string): Promise<void> {
    const keys = this.ctx.keys.slackBudget(parts.map(orUnderscore));
    // Both keys share the budget's hash tag: one slot, one transaction.
    await this.ctx.redis.multi().zrem(keys.queue, member).zrem(keys.seen, member).exec();
  }

  /** Nobody takes a slot of this budget for `retryAfterMs` (Slack's Retry-After), from any process. */
  async pause(parts: readonly string[], shape: BudgetShape, retryAfterMs: number): Promise<void> {
    const keys = this.ctx.keys.slackBudget(parts.map(orUnderscore));
    await this.ctx.script(
      'pauseSlackBudget',
      [keys.tat],
      [Math.ceil(retryAfterMs), Math.ceil(shape.intervalMs), shape.burst],
    );
  }
}

/** A workspace id may be unknown (''); keys need a non-empty part. */
const orUnderscore = (part: string) => (part === '' ? '_' : part);
