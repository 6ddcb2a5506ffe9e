/**
 * What a worker wants the bot's /readyz to say about it without making anything unready: today, that it
 * serves no metrics or probes because its METRICS_PORT was taken (a second worker on one host, a rolling
 * restart). One zset (`<p>:workers:no-metrics`) of JSON members scored by when the worker last said so;
 * a worker repeats it while it runs and removes it when it stops, and readers leave out notices older
 * than NOTICE_MAX_AGE_MS, so a worker that died without cleaning up drops out by itself.
 */
import { z } from 'zod';
import type { StoreContext } from './context.js';

/** A notice not repeated for this long belongs to a worker that is gone. */
export const NOTICE_MAX_AGE_MS = 90_000;
/** How often a running worker repeats its notice (well within NOTICE_MAX_AGE_MS). */
export const NOTICE_REPEAT_MS = 30_000;

const noMetricsSchema = z.strictObject({
  host: z.string(),
  pid: z.number().int(),
  port: z.number().int(),
});
export type NoMetricsNotice = z.infer<typeof noMetricsSchema>;

export class WorkerNotices {
  constructor(private readonly ctx: StoreContext) {}

  private get key(): string {
    return this.ctx.keys.workersWithoutMetrics;
  }

  /** Says (again) that this worker serves no metrics; `now` is when, in ms. */
  async noMetrics(notice: NoMetricsNotice, now = Date.now()): Promise<void> {
    await this.ctx.redis
      .multi()
      .zadd(this.key, now, JSON.stringify(noMetricsSchema.parse(notice)))
      .zremrangebyscore(this.key, '-inf', now - NOTICE_MAX_AGE_MS)
      .exec();
  }

  /** Withdraws the notice (the worker is stopping). */
  async withdraw(notice: NoMetricsNotice): Promise<void> {
    await this.ctx.redis.zrem(this.key, JSON.stringify(noMetricsSchema.parse(notice)));
  }

  /** Workers that said so within NOTICE_MAX_AGE_MS, with when they last said it. */
  async withoutMetrics(now = Date.now()): Promise<Array<NoMetricsNotice & { seenAt: string }>> {
    const flat = await this.ctx.redis.zrangebyscore(this.key, now - NOTICE_MAX_AGE_MS, '+inf', 'WITHSCORES');
    const notices: Array<NoMetricsNotice & { seenAt: string }> = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      // A member written by another version or by hand is left out rather than failing the probe.
      const parsed = noMetricsSchema.safeParse(safeJson(flat[i] ?? ''));
      if (parsed.success)
        notices.push({ ...parsed.data, seenAt: new Date(Number(flat[i + 1])).toISOString() });
    }
    return notices;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
