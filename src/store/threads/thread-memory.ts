import { z } from 'zod';
import { canonicalJson } from '../../loop/hash.js';
import type { Message } from '../../loop/messages.js';
import type { StoreContext } from '../context.js';
import { parseJsonList } from '../decode.js';
import { StoreError } from '../errors.js';
import type { ThreadKeys } from '../keys.js';

/** A Slack thread: where a conversation with loopgate lives. */
export interface ThreadRef {
  teamId: string;
  channelId: string;
  threadTs: string;
}

/** The turns a thread's next run sees: the questions asked and the answers given, as plain text. */
export type ThreadTurn = Extract<Message, { role: 'user' } | { role: 'assistant' }>;

/** The conversation a person looks at in Slack while using the agent pane (its thread context). */
export const viewingSchema = z.strictObject({
  channelId: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
  teamId: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/)
    .optional(),
});
export type Viewing = z.infer<typeof viewingSchema>;

export type ClaimResult = 'active' | 'queued' | 'full';
const CLAIM_REPLIES: Record<number, ClaimResult | undefined> = { 1: 'active', 0: 'queued', 2: 'full' };

/** Questions and answers kept per thread (the oldest are dropped): bounds the context a follow-up gets. */
const MAX_TURNS = 40;
/**
 * How long the thread waits for the queued job it was handed to; should that job never come (the worker
 * died between the hand-over and adding it), the thread frees itself.
 */
const HANDOVER_MS = 300_000;

/**
 * loopgate's own memory of Slack threads, because Slack's history APIs are rate-limited to about one
 * call a minute for apps outside the Marketplace. It also serialises runs per thread: one run works in
 * a thread at a time, later messages wait in the thread's inbox and start when it ends.
 */
export class ThreadMemory {
  constructor(private readonly ctx: StoreContext) {}

  private keys(thread: ThreadRef): ThreadKeys {
    return this.ctx.keys.thread(thread.teamId, thread.channelId, thread.threadTs);
  }

  private ttlMs(): number {
    return this.ctx.options.maxRunLifetimeMs || this.ctx.options.retentionMs;
  }

  async history(thread: ThreadRef): Promise<ThreadTurn[]> {
    const list = await this.ctx.redis.lrange(this.keys(thread).history, 0, -1);
    return parseJsonList(list) as ThreadTurn[];
  }

  /**
   * Appends turns to the thread's history outside a run's end (news a later question should see, such
   * as the outcome of a call approved again), keeping the same bound and lifetime.
   */
  async appendTurns(thread: ThreadRef, turns: readonly ThreadTurn[]): Promise<void> {
    if (turns.length === 0) return;
    const key = this.keys(thread).history;
    await this.ctx.redis
      .multi()
      .rpush(key, ...turns.map((t) => JSON.stringify(t)))
      .ltrim(key, -MAX_TURNS, -1)
      .pexpire(key, this.ttlMs())
      .exec();
  }

  /**
   * Records the conversation a person looks at while talking to loopgate in its agent pane (Slack's
   * thread context), replacing the previous one. Kept as long as the thread's memory.
   */
  async setViewing(thread: ThreadRef, viewing: Viewing): Promise<void> {
    const key = this.keys(thread).pane;
    await this.ctx.redis
      .multi()
      .hset(key, 'viewing', JSON.stringify(viewingSchema.parse(viewing)))
      .pexpire(key, this.ttlMs())
      .exec();
  }

  /** The conversation the person looks at, for an agent pane thread; null for any other thread. */
  async viewing(thread: ThreadRef): Promise<Viewing | null> {
    const text = await this.ctx.redis.hget(this.keys(thread).pane, 'viewing');
    if (text === null) return null;
    const parsed = viewingSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  }

  /** True once per agent pane thread: the caller sets its title (false for other threads, and later). */
  async claimTitle(thread: ThreadRef): Promise<boolean> {
    const key = this.keys(thread).pane;
    if ((await this.ctx.redis.exists(key)) === 0) return false;
    return (await this.ctx.redis.hsetnx(key, 'titled', '1')) === 1;
  }

  /** Whether a thread has a run working in it, and which. */
  async activeRun(thread: ThreadRef): Promise<string | null> {
    const active = await this.ctx.redis.get(this.keys(thread).active);
    return active && !active.startsWith('next:') ? active : null;
  }

  /**
   * Makes `runId` the thread's active run (`active`), or queues `job` behind the run working there
   * (`queued`), unless the thread's inbox already holds `maxQueuedPerThread` jobs (`full`: not queued).
   * Idempotent for a redelivered job.
   */
  async claim(thread: ThreadRef, runId: string, job: unknown, replacing?: string): Promise<ClaimResult> {
    const keys = this.keys(thread);
    const reply = await this.ctx.script(
      'claimThread',
      [keys.active, keys.inbox],
      [runId, canonicalJson(job), this.ttlMs(), replacing ?? '', this.ctx.options.maxQueuedPerThread],
    );
    const result = CLAIM_REPLIES[Number(reply)];
    if (!result) throw new StoreError('corrupt_record', `claimThread answered ${String(reply)}`, { runId });
    return result;
  }

  /** Whether the thread's inbox holds as many jobs as it may (a new message would not be queued). */
  async inboxFull(thread: ThreadRef): Promise<boolean> {
    return (await this.ctx.redis.llen(this.keys(thread).inbox)) >= this.ctx.options.maxQueuedPerThread;
  }

  /**
   * The thread's run ended: appends its turns to the history and returns the next queued job (the
   * thread is held for it a short while) or null when the thread is free. A run that was not the active
   * one changes nothing, so a recovered job cannot record its turns twice.
   */
  async release(thread: ThreadRef, runId: string, turns: readonly ThreadTurn[]): Promise<unknown | null> {
    const keys = this.keys(thread);
    const reply = await this.ctx.script(
      'releaseThread',
      [keys.active, keys.inbox, keys.history],
      [runId, this.ttlMs(), MAX_TURNS, HANDOVER_MS, ...turns.map((t) => JSON.stringify(t))],
    );
    if (reply === null || reply === -1) return null;
    if (typeof reply !== 'string') {
      throw new StoreError('corrupt_record', `releaseThread answered ${String(reply)}`, { runId });
    }
    return JSON.parse(reply) as unknown;
  }
}
