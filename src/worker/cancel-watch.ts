/**
 * How a worker learns at once that a run it advances was cancelled, so the engine's `cancelSignal`
 * aborts the model request and the reads in flight (a stop button should not wait for a 30-second model
 * call to end). The durable record (the run header's `cancel` field) is the only truth: a message on
 * the `cancels` channel is a hint, acted on only after the field was read; and every `pollMs` the field
 * of each watched run is read anyway, so a lost message or a dropped subscriber connection delays the
 * abort by at most `pollMs` and never loses it.
 */
import type { Logger } from '../loop/tool-contract.js';
import type { RedisClient } from '../store/scripts.js';

/** One run watched by one job: `signal` aborts once the run's cancel is recorded. */
interface WatchedRun {
  signal: AbortSignal;
  /** When the abort happened (performance.now()), for the stop-latency figures. */
  abortedAt(): number | undefined;
  /** Stops watching (the job ended); idempotent. */
  stop(): void;
}

interface CancelWatchOptions {
  /** Whether the run's cancel is recorded (RunStore.cancelRecorded). A failing check counts as no. */
  isCancelled(runId: string): Promise<boolean>;
  /**
   * A connection of its own, given over to subscribe mode (the channel is the store's `keys.cancels`).
   * Absent: polling only.
   */
  subscriber?: RedisClient;
  channel: string;
  /** How often the cancel field of each watched run is read. Default 1,000 ms. */
  pollMs?: number;
  logger: Logger;
}

const CANCEL_WATCH_POLL_MS = 1_000;

export class CancelWatch {
  private readonly watched = new Map<string, Set<{ abort: () => void }>>();
  private timer: NodeJS.Timeout | undefined;
  private readonly pollMs: number;

  constructor(private readonly options: CancelWatchOptions) {
    this.pollMs = options.pollMs ?? CANCEL_WATCH_POLL_MS;
  }

  /** Subscribes to the channel (when there is a subscriber connection). */
  async start(): Promise<void> {
    const { subscriber, channel, logger } = this.options;
    if (!subscriber) return;
    subscriber.on('message', (from: string, runId: string) => {
      if (from === channel && this.watched.has(runId)) this.check(runId);
    });
    await subscriber.subscribe(channel);
    logger.debug({ channel }, 'listening for cancelled runs');
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    const { subscriber } = this.options;
    if (subscriber) await subscriber.quit().catch(() => subscriber.disconnect());
  }

  /** Watches a run while a job advances it; call `stop()` when the job ends. */
  watch(runId: string): WatchedRun {
    const controller = new AbortController();
    let at: number | undefined;
    const entry = {
      abort: () => {
        if (controller.signal.aborted) return;
        at = performance.now();
        controller.abort(new Error('the run was cancelled'));
      },
    };
    let set = this.watched.get(runId);
    if (!set) {
      set = new Set();
      this.watched.set(runId, set);
    }
    set.add(entry);
    this.ensurePolling();
    return {
      signal: controller.signal,
      abortedAt: () => at,
      stop: () => {
        const current = this.watched.get(runId);
        current?.delete(entry);
        if (current?.size === 0) this.watched.delete(runId);
        if (this.watched.size === 0) {
          clearInterval(this.timer);
          this.timer = undefined;
        }
      },
    };
  }

  private ensurePolling(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      for (const runId of this.watched.keys()) this.check(runId);
    }, this.pollMs);
    this.timer.unref();
  }

  /** Reads the durable record, and aborts the run's watchers when it is there. */
  private check(runId: string): void {
    this.options.isCancelled(runId).then(
      (yes) => {
        if (!yes) return;
        for (const entry of this.watched.get(runId) ?? []) entry.abort();
      },
      (err: unknown) => this.options.logger.debug({ err, runId }, 'could not read the cancel record'),
    );
  }
}
