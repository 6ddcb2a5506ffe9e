/**
 * One placeholder message per run, edited in place as the run moves on, never more often than once per
 * interval (chat.update is Tier 3, and a thread that flickers helps nobody). The latest text always wins:
 * texts arriving within the interval replace each other and the last one is sent when the interval ends.
 * Calls to Slack for one run are serialised, so an edit never races the post that created the message,
 * and once a run's placeholder is being deleted nothing edits it any more: progress that arrives later
 * (a timer that was due, a second job of the same run in this process) is dropped, never sent after the
 * chat.delete (Slack would answer message_not_found).
 */
import type { Logger } from '../loop/tool-contract.js';
import type { RunSlackContext } from './notifier-port.js';

interface PlaceholderTransport {
  /** Posts the placeholder; resolves with its ts, or null when Slack refused (already logged). */
  post(ctx: RunSlackContext, text: string): Promise<string | null>;
  update(ctx: RunSlackContext, ts: string, text: string): Promise<void>;
  remove(ctx: RunSlackContext, ts: string): Promise<void>;
}

interface PlaceholderOptions {
  transport: PlaceholderTransport;
  logger: Logger;
  /** Least time between two sends for one run. */
  intervalMs: number;
  /** Runs tracked at once; the oldest is forgotten first (its ts stays with the run's own state). */
  maxRuns: number;
  now?: () => number;
}

interface RunProgress {
  ctx: RunSlackContext;
  ts: string | null;
  posting: boolean;
  /** Text not sent yet. */
  latest: string | null;
  lastSentAt: number;
  timer: NodeJS.Timeout | null;
  chain: Promise<void>;
  /** The placeholder is deleted or being deleted: nothing is sent for this run any more. */
  ended: boolean;
}

export class Placeholders {
  private readonly runs = new Map<string, RunProgress>();
  /** Runs whose placeholder this process deleted, oldest first (bounded like `runs`). */
  private readonly ended = new Set<string>();
  private readonly now: () => number;

  constructor(private readonly opts: PlaceholderOptions) {
    this.now = opts.now ?? Date.now;
  }

  tsOf(runId: string): string | undefined {
    return this.runs.get(runId)?.ts ?? undefined;
  }

  async show(ctx: RunSlackContext, text: string): Promise<void> {
    if (this.ended.has(ctx.runId)) return;
    const run = this.track(ctx);
    run.latest = text;
    // The first post is awaited so that placeholderOf() knows the ts; later sends are throttled.
    if (run.ts === null && !run.posting && run.lastSentAt === Number.NEGATIVE_INFINITY) {
      run.posting = true;
      await this.enqueue(run);
      return;
    }
    this.schedule(run);
  }

  async flush(ctx: RunSlackContext): Promise<void> {
    const run = this.runs.get(ctx.runId);
    if (!run) return;
    this.cancelTimer(run);
    await this.enqueue(run);
  }

  /** Drops unsent text and waits for calls in flight, so nothing edits the placeholder any more. */
  async silence(ctx: RunSlackContext): Promise<void> {
    const run = this.runs.get(ctx.runId);
    if (!run) return;
    this.cancelTimer(run);
    run.latest = null;
    await run.chain;
  }

  /** Silences the run, deletes its placeholder and forgets the run. */
  async end(ctx: RunSlackContext): Promise<void> {
    const run = this.track(ctx);
    run.ended = true;
    this.ended.add(ctx.runId);
    while (this.ended.size > this.opts.maxRuns) this.ended.delete(this.ended.values().next().value ?? '');
    await this.silence(ctx);
    this.runs.delete(ctx.runId);
    if (run.ts !== null) await this.opts.transport.remove(run.ctx, run.ts);
  }

  private track(ctx: RunSlackContext): RunProgress {
    let run = this.runs.get(ctx.runId);
    if (!run) {
      run = {
        ctx,
        ts: null,
        posting: false,
        latest: null,
        lastSentAt: Number.NEGATIVE_INFINITY,
        timer: null,
        chain: Promise.resolve(),
        ended: false,
      };
      this.runs.set(ctx.runId, run);
      this.forgetOldest();
    }
    run.ctx = ctx;
    if (run.ts === null && ctx.placeholderTs) run.ts = ctx.placeholderTs;
    return run;
  }

  private forgetOldest(): void {
    while (this.runs.size > this.opts.maxRuns) {
      const [oldestId, oldest] = this.runs.entries().next().value ?? [];
      if (oldestId === undefined || !oldest) return;
      this.cancelTimer(oldest);
      this.runs.delete(oldestId);
    }
  }

  private schedule(run: RunProgress): void {
    if (run.timer) return;
    const delay = Math.max(0, run.lastSentAt + this.opts.intervalMs - this.now());
    run.timer = setTimeout(() => {
      run.timer = null;
      void this.enqueue(run);
    }, delay);
    // A pending edit must not keep a shutting-down worker alive.
    run.timer.unref();
  }

  private cancelTimer(run: RunProgress): void {
    if (run.timer) clearTimeout(run.timer);
    run.timer = null;
  }

  private enqueue(run: RunProgress): Promise<void> {
    run.chain = run.chain
      .then(() => this.sendLatest(run))
      .catch((err: unknown) =>
        this.opts.logger.error({ runId: run.ctx.runId, err }, 'placeholder update failed'),
      );
    return run.chain;
  }

  private async sendLatest(run: RunProgress): Promise<void> {
    const text = run.latest;
    if (text === null || run.ended) return;
    run.latest = null;
    run.lastSentAt = this.now();
    if (run.ts !== null) {
      await this.opts.transport.update(run.ctx, run.ts, text);
      return;
    }
    try {
      run.ts = await this.opts.transport.post(run.ctx, text);
    } finally {
      run.posting = false;
    }
  }
}
