import { canonicalJson } from '../loop/hash.js';
import type { Message } from '../loop/types.js';
import type { StoreContext } from './context.js';
import { parseJsonList } from './decode.js';
import { StoreError } from './errors.js';
import type { ThreadKeys } from './keys.js';

/** A Slack thread: where a conversation with loopgate lives. */
export interface ThreadRef {
  teamId: string;
  channelId: string;
  threadTs: string;
}

/** The turns a thread's next run sees: the questions asked and the answers given, as plain text. */
export type ThreadTurn = Extract<Message, { role: 'user' } | { role: 'assistant' }>;

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
