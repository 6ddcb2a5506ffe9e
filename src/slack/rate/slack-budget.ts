/**
 * One Slack rate budget for every worker and bot of an installation (in Redis: SlackBudgetStore),
 * consulted before each call rather than learned from 429s. Calls wait in line by priority, then
 * arrival: approval cards and their updates, then answers, then decorations (status, reactions, titles,
 * progress edits). A card or an answer waits for its slot up to a bound and then fails with
 * SlackBudgetExhausted (nothing was sent: the caller keeps it and tries later). A decoration never
 * waits in line: it goes when a slot is free leaving headroom, else it waits aside as its thread's
 * latest of its kind (a later one replaces it: coalesced) and is dropped after a while (logged).
 *
 * A 429 seen by any process pauses that budget (the method, and the channel for posts) for every
 * process: `rateLimited` is wired to the WebClient's `rate_limited` event.
 */
import { randomUUID } from 'node:crypto';
import { LoopgateError } from '../../loop/errors.js';
import type { Logger } from '../../loop/tool-contract.js';
import type { SlackBudgetStore, SlotVerdict } from '../../store/budget/slack-budget-store.js';
import { budgetParts, budgetShape, DEFAULT_SLACK_RATE_LIMITS, type SlackRateLimits } from './limits.js';

type Priority = 'card' | 'answer' | 'decoration';

/** A call to budget: its method, the channel it posts in, and how much it matters. */
export interface BudgetedCall {
  method: string;
  channel?: string | undefined;
  priority: Priority;
}

/** A decoration: `key` names what a later one replaces (e.g. `<thread> status`). */
interface Decoration extends Omit<BudgetedCall, 'priority'> {
  key: string;
  /** For the log line when the thread's decorations were dropped. */
  runId?: string | undefined;
}

/** What the budget counts, per method (src/metrics adapts these to Prometheus). */
export interface SlackBudgetMetrics {
  call(method: string): void;
  waited(method: string, ms: number): void;
  rateLimited(method: string): void;
  dropped(method: string, how: 'coalesced' | 'dropped'): void;
}

interface SlackBudgetOptions {
  store: Pick<SlackBudgetStore, 'take' | 'pause' | 'leave'>;
  logger: Logger;
  limits?: SlackRateLimits;
  metrics?: SlackBudgetMetrics;
  /** Longest an approval card (or its update, a modal, an ephemeral) waits for its slot. Default 60 s. */
  cardWaitMs?: number;
  /** Longest an answer waits for its slot before it is left for a later job. Default 120 s. */
  answerWaitMs?: number;
  /** Longest a decoration waits aside before it is dropped. Default 20 s. */
  decorationWaitMs?: number;
  /** Slots of a burst a decoration leaves free for cards and answers. Default 1. */
  decorationHeadroom?: number;
  /** How far ahead a slot is promised (the caller sleeps until it). Default 500 ms: a card waits at most that and one interval. */
  horizonMs?: number;
  /** Longest a read of the budget may take; beyond it (or on a Redis error) the call goes out unbudgeted. Default 3 s. */
  storeTimeoutMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

/** Thrown by `call` when no slot came within the wait: nothing was sent. */
export class SlackBudgetExhausted extends LoopgateError {
  constructor(
    readonly method: string,
    readonly waitedMs: number,
  ) {
    super('rate_budget_exhausted', `no Slack rate budget for ${method} within ${Math.round(waitedMs)} ms`);
  }
}

const RANK_OF: Record<Priority, number> = { card: 0, answer: 1, decoration: 2 };
/** Ranks are priority first, then arrival (ms): 1e13 ms is beyond any clock reading. */
const RANK_STEP = 1e13;
/** A waiting caller asks again at least this often; one that stops for 5 s has left. */
const MAX_POLL_MS = 1_000;
const STALE_MS = 5_000;

const defaultSleep = (ms: number) =>
  new Promise<void>((resolve) => {
    setTimeout(resolve, ms).unref?.();
  });

interface Waiting {
  call: () => Promise<unknown>;
  decoration: Decoration;
  /** When the oldest decoration this one replaced started waiting (drops are judged from it). */
  since: number;
  seq: number;
  /** Called once it was sent (with `fn`'s error, if any), replaced or dropped. */
  done: (err?: unknown) => void;
}

type DecorationOutcome = { sent: false } | { sent: true; error?: unknown };

export class SlackBudget {
  readonly limits: SlackRateLimits;
  private readonly o: Required<Omit<SlackBudgetOptions, 'metrics' | 'limits'>>;
  /** Decorations waiting aside, by key: only the latest of each is kept. */
  private readonly aside = new Map<string, Waiting>();
  /** The latest decoration asked for each key (an older one still being tried is stale). */
  private readonly latest = new Map<string, number>();
  private decorations = 0;
  /** Decorations taken from aside whose Slack call has not finished yet. */
  private sendingAside = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: SlackBudgetOptions) {
    this.limits = opts.limits ?? DEFAULT_SLACK_RATE_LIMITS;
    this.o = {
      store: opts.store,
      logger: opts.logger,
      cardWaitMs: opts.cardWaitMs ?? 60_000,
      answerWaitMs: opts.answerWaitMs ?? 120_000,
      decorationWaitMs: opts.decorationWaitMs ?? 20_000,
      decorationHeadroom: opts.decorationHeadroom ?? 1,
      horizonMs: opts.horizonMs ?? 500,
      storeTimeoutMs: opts.storeTimeoutMs ?? 3_000,
      sleep: opts.sleep ?? defaultSleep,
    };
  }

  /**
   * Runs `fn` once this call's slot came (waiting in line). Rejects with SlackBudgetExhausted when no
   * slot came within the priority's wait (`fn` not run), or with `fn`'s own error.
   */
  async call<T>(spec: BudgetedCall, fn: () => Promise<T>): Promise<T> {
    const limit = spec.priority === 'card' ? this.o.cardWaitMs : this.o.answerWaitMs;
    const started = Date.now();
    if (!(await this.acquire(spec, started + limit))) {
      throw new SlackBudgetExhausted(spec.method, Date.now() - started);
    }
    return fn();
  }

  /**
   * Takes a slot only if one is free now and leaves `headroom` slots of the burst for others (a stream
   * start leaves one for its stop). False: the caller does without (posts the answer whole).
   */
  async tryNow(spec: BudgetedCall, headroom = 1): Promise<boolean> {
    const shape = budgetShape(spec.method, this.limits);
    if (!shape) return true;
    const verdict = await this.take(spec.method, budgetParts(spec.method, spec.channel), {
      ...shape,
      headroom: Math.min(headroom, shape.burst),
      member: null,
      rank: 0,
      horizonMs: 0,
      staleMs: STALE_MS,
    });
    if (verdict.granted) this.opts.metrics?.call(spec.method);
    return verdict.granted;
  }

  /**
   * Sends a decoration when a slot is free, else keeps it aside as the latest of its key (replacing,
   * coalescing, an older one) and tries again; drops it after `decorationWaitMs`. Resolves once it was
   * sent or set aside (the caller never waits for room); rejects only with `fn`'s own error when it was
   * sent at once.
   */
  decorate(decoration: Decoration, fn: () => Promise<unknown>): Promise<void> {
    const key = decoration.key;
    const seq = ++this.decorations;
    this.latest.set(key, seq);
    const settle = () => {
      if (this.latest.get(key) === seq) this.latest.delete(key);
    };
    // Set aside, it is no longer the caller's: a later failure is only logged.
    const aside: Waiting = {
      call: fn,
      decoration,
      since: Date.now(),
      seq,
      done: (err?: unknown) => {
        settle();
        if (err !== undefined)
          this.o.logger.warn({ err, method: decoration.method }, 'a delayed Slack decoration failed');
      },
    };
    if (this.aside.has(key)) {
      this.setAside(aside);
      return Promise.resolve();
    }
    // Tries of one key run concurrently: an older one granted after a newer one must not overwrite it.
    const unlessStale = () => {
      if (this.latest.get(key) === seq) return fn();
      this.opts.metrics?.dropped(decoration.method, 'coalesced');
      return Promise.resolve();
    };
    return this.tryDecoration(decoration, unlessStale).then((outcome) => {
      if (outcome.sent) {
        settle();
        if (outcome.error !== undefined) throw outcome.error;
        return;
      }
      if (this.latest.get(key) !== seq) {
        // A later decoration of the key came meanwhile: this one is stale.
        this.opts.metrics?.dropped(decoration.method, 'coalesced');
        return;
      }
      this.setAside(aside);
      this.scheduleAside();
    });
  }

  /** Keeps `waiting` aside as its key's latest; an older one there is coalesced away. */
  private setAside(waiting: Waiting) {
    const older = this.aside.get(waiting.decoration.key);
    if (older) {
      this.opts.metrics?.dropped(older.decoration.method, 'coalesced');
      waiting.since = Math.min(waiting.since, older.since);
      older.done();
    }
    this.aside.set(waiting.decoration.key, waiting);
  }

  /**
   * Slack answered 429: every process holds back this budget for `retryAfterSec` (the WebClient's
   * `rate_limited` event gives the method's URL and the call's arguments).
   */
  rateLimited(method: string, channel: string | undefined, retryAfterSec: number): void {
    this.opts.metrics?.rateLimited(method);
    const shape = budgetShape(method, this.limits);
    if (!shape) return;
    this.o.store
      .pause(budgetParts(method, channel), shape, retryAfterSec * 1_000)
      .catch((err: unknown) => this.o.logger.warn({ err, method }, 'could not share a Slack Retry-After'));
  }

  /** Decorations still waiting aside or being sent from there (tests and shutdown). */
  get waitingAside(): number {
    return this.aside.size + this.sendingAside;
  }

  /** Takes a slot in line by priority, waiting until `deadline`; false when none came in time. */
  private async acquire(spec: BudgetedCall, deadline: number): Promise<boolean> {
    const shape = budgetShape(spec.method, this.limits);
    if (!shape) return true;
    const parts = budgetParts(spec.method, spec.channel);
    const member = randomUUID();
    const started = Date.now();
    const rank = RANK_OF[spec.priority] * RANK_STEP + started;
    for (;;) {
      const verdict = await this.take(spec.method, parts, {
        ...shape,
        headroom: 0,
        member,
        rank,
        horizonMs: this.o.horizonMs,
        staleMs: STALE_MS,
      });
      if (verdict.granted) {
        if (verdict.waitMs > 0) await this.o.sleep(verdict.waitMs);
        this.opts.metrics?.call(spec.method);
        this.opts.metrics?.waited(spec.method, Date.now() - started);
        return true;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        await this.o.store.leave(parts, member).catch(() => undefined);
        this.opts.metrics?.waited(spec.method, Date.now() - started);
        return false;
      }
      const pause = Math.min(Math.max(verdict.nextInMs - this.o.horizonMs, 50), MAX_POLL_MS, left);
      await this.o.sleep(pause * (0.8 + Math.random() * 0.4));
    }
  }

  /**
   * Reads the shared budget. When Redis cannot answer in time the call is granted: Slack still enforces
   * its limits, and a card, an answer or a person's "not recorded" note must not wait on the store that
   * failed (the approval store is often the same Redis).
   */
  private async take(
    method: string,
    parts: readonly string[],
    req: Parameters<SlackBudgetOptions['store']['take']>[1],
  ): Promise<SlotVerdict> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer from the rate budget store within ${this.o.storeTimeoutMs} ms`)),
        this.o.storeTimeoutMs,
      );
    });
    try {
      return await Promise.race([this.o.store.take(parts, req), timeout]);
    } catch (err) {
      this.o.logger.warn({ err, method }, 'could not read the Slack rate budget: sending without it');
      return { granted: true, waitMs: 0 };
    } finally {
      clearTimeout(timer);
    }
  }

  /** One try of a decoration: sent when a slot is free now leaving the headroom. */
  private async tryDecoration(
    decoration: Decoration,
    fn: () => Promise<unknown>,
  ): Promise<DecorationOutcome> {
    const granted = await this.tryNow({ ...decoration, priority: 'decoration' }, this.o.decorationHeadroom);
    if (!granted) return { sent: false };
    try {
      await fn();
      return { sent: true };
    } catch (error) {
      return { sent: true, error };
    }
  }

  /** Tries the decorations waiting aside again in a while; drops those waiting too long. */
  private scheduleAside() {
    if (this.timer || this.aside.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.retryAside().finally(() => this.scheduleAside());
    }, 500);
    this.timer.unref?.();
  }

  private async retryAside() {
    const droppedRuns = new Map<string, string[]>();
    for (const [key, waiting] of [...this.aside]) {
      if (this.aside.get(key) !== waiting) continue;
      if (Date.now() - waiting.since >= this.o.decorationWaitMs) {
        this.aside.delete(key);
        this.opts.metrics?.dropped(waiting.decoration.method, 'dropped');
        const run = waiting.decoration.runId ?? '';
        droppedRuns.set(run, [...(droppedRuns.get(run) ?? []), waiting.decoration.method]);
        waiting.done();
        continue;
      }
      let taken = false;
      const outcome = await this.tryDecoration(waiting.decoration, () => {
        // A newer decoration of the key may have replaced this one while the slot was taken.
        if (this.aside.get(key) !== waiting) return Promise.resolve();
        this.aside.delete(key);
        taken = true;
        this.sendingAside++;
        return waiting.call().finally(() => {
          this.sendingAside--;
        });
      });
      if (outcome.sent && taken) waiting.done(outcome.error);
    }
    for (const [runId, methods] of droppedRuns) {
      this.o.logger.info(
        { ...(runId ? { runId } : {}), methods, waitedMs: this.o.decorationWaitMs },
        "dropped a thread's decorations: Slack's rate budget had no room for them",
      );
    }
  }
}
