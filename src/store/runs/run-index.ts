import { z } from 'zod';
import type { StoreContext } from '../context.js';
import { decode } from '../decode.js';
import type { SlackContext } from '../records.js';
import {
  indexKey,
  type RunIndexScope,
  type RunRow,
  readRunRows,
  type ScannedRunIds,
  scanRecentRunIds,
  type UnreadableRun,
} from './run-rows.js';
import { runStatusSchema, stopReasonSchema } from './run-state-schema.js';

export type { RunIndexScope } from './run-rows.js';

/** One line of `/loopgate status`. */
export interface RunSummary {
  runId: string;
  status: z.infer<typeof runStatusSchema>;
  step: number;
  stopReason: z.infer<typeof stopReasonSchema> | null;
  createdAt: number;
  updatedAt: number;
}

const summarySchema = z.strictObject({
  status: runStatusSchema,
  step: z.coerce.number(),
  stopReason: stopReasonSchema.nullable(),
  createdAt: z.coerce.number(),
  updatedAt: z.coerce.number(),
});

/**
 * Recent runs per channel and per requester (sorted sets scored by creation time). They live outside
 * the runs' hash slots, so they are written right after a run is created, not atomically with it;
 * entries whose run has expired are skipped and removed when read. Each index is trimmed by age
 * (older than a run can live) and by count (`indexMaxRuns`) whenever a run is added.
 */
export class RunIndex {
  constructor(private readonly ctx: StoreContext) {}

  async add(runId: string, slack: SlackContext, requesterUserId: string, createdAt: number): Promise<void> {
    const { keys, options } = this.ctx;
    const oldest = createdAt - options.maxRunLifetimeMs - options.retentionMs;
    const indexes = [
      keys.channelIndex(slack.teamId, slack.channelId),
      keys.userIndex(slack.teamId, requesterUserId),
    ];
    await Promise.all(
      indexes.map((key) =>
        this.ctx.redis
          .multi()
          .zadd(key, createdAt, runId)
          .zremrangebyscore(key, '-inf', `(${oldest}`)
          .zremrangebyrank(key, 0, -(options.indexMaxRuns + 1))
          .pexpire(key, options.maxRunLifetimeMs + options.retentionMs)
          .exec(),
      ),
    );
  }

  /** Ids of the newest runs of a channel or a requester, newest first. */
  recentIds(scope: RunIndexScope, limit: number): Promise<string[]> {
    return this.ctx.redis.zrevrange(indexKey(this.ctx, scope), 0, Math.max(0, limit - 1));
  }

  /** Ids of the newest runs under the prefix, by a SCAN bounded to `maxHeaders` run headers. */
  scanRecentIds(limit: number, maxHeaders: number): Promise<ScannedRunIds> {
    return scanRecentRunIds(this.ctx, limit, maxHeaders);
  }

  /** Rows (requester, thread, question…) of `runIds` in that order; gone runs left out, damaged ones reported. */
  rows(runIds: readonly string[]): Promise<{ rows: RunRow[]; unreadable: UnreadableRun[] }> {
    return readRunRows(this.ctx, runIds);
  }

  /** The newest runs of a channel or a requester, newest first. */
  async recent(scope: RunIndexScope, limit = 10): Promise<RunSummary[]> {
    const key = indexKey(this.ctx, scope);
    const runIds = await this.recentIds(scope, limit);
    const { summaries, gone } = await this.read(runIds);
    if (gone.length > 0) await this.ctx.redis.zrem(key, ...gone);
    return summaries;
  }

  /** Summaries of the given runs (those that still exist), in the given order. */
  async summaries(runIds: readonly string[]): Promise<RunSummary[]> {
    return (await this.read(runIds)).summaries;
  }

  private async read(runIds: readonly string[]): Promise<{ summaries: RunSummary[]; gone: string[] }> {
    const rows = await Promise.all(
      runIds.map((runId) =>
        this.ctx.redis.hmget(
          this.ctx.keys.run(runId).header,
          'status',
          'step',
          'stopReason',
          'createdAt',
          'updatedAt',
        ),
      ),
    );
    const summaries: RunSummary[] = [];
    const gone: string[] = [];
    rows.forEach(([status, step, stopReason, createdAt, updatedAt], i) => {
      const runId = runIds[i] as string;
      if (status === null || status === undefined) {
        gone.push(runId);
        return;
      }
      const row = decode(`summary of run ${runId}`, { runId }, () =>
        summarySchema.parse({ status, step, stopReason: stopReason || null, createdAt, updatedAt }),
      );
      summaries.push({ runId, ...row });
    });
    return { summaries, gone };
  }
}
