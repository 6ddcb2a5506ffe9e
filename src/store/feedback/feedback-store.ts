/**
 * Feedback on answers (the feedback buttons under a final answer): one record per person and run, in the
 * run's own `feedback` hash (the run's hash tag: recordFeedback-2.lua and commentFeedback-2.lua each touch
 * one slot), kept as long as the run. A cross-run index (`idx:feedback`, a zset of `<runId> <userId>` by
 * time, single-key commands written right after the script) lets `loopgate feedback --since` list them in
 * time order; readers skip entries whose run is gone.
 */
import { z } from 'zod';
import type { StoreContext } from '../context.js';
import { decode, replyArray } from '../decode.js';
import { scriptError } from '../errors.js';
import { isRunId } from '../ids.js';

export const FEEDBACK_VALUES = ['good', 'bad'] as const;
export type FeedbackValue = (typeof FEEDBACK_VALUES)[number];

/** Longest comment kept (the modal's input allows as much). */
export const MAX_FEEDBACK_COMMENT = 2_000;

export const feedbackRecordSchema = z.strictObject({
  runId: z.string(),
  userId: z.string(),
  value: z.enum(FEEDBACK_VALUES),
  /** When the button was clicked (ms since the epoch). */
  at: z.number(),
  /** Where the answer was (absent when the click did not say). */
  channelId: z.string().optional(),
  comment: z.string().max(MAX_FEEDBACK_COMMENT).optional(),
  commentedAt: z.number().optional(),
});
export type FeedbackRecord = z.infer<typeof feedbackRecordSchema>;

const parseRecord = (text: unknown, context: Record<string, unknown>): FeedbackRecord =>
  decode('a feedback record', context, () => feedbackRecordSchema.parse(JSON.parse(String(text))));

/** Largest number of records one `since` call returns (newest dropped past it). */
export const FEEDBACK_LIST_LIMIT = 10_000;

export class FeedbackStore {
  constructor(private readonly ctx: StoreContext) {}

  /**
   * Records a click; `recorded` is false when the person had already given feedback on this run (the
   * stored record is returned then, unchanged). Throws StoreError `not_found` when the run is gone.
   */
  async record(input: Omit<FeedbackRecord, 'comment' | 'commentedAt'>): Promise<{
    recorded: boolean;
    record: FeedbackRecord;
  }> {
    const record = feedbackRecordSchema.parse(input);
    const keys = this.ctx.keys.run(record.runId);
    const context = { runId: record.runId, userId: record.userId };
    const reply = replyArray(
      'recordFeedback',
      await this.ctx.script(
        'recordFeedback',
        [keys.header, keys.feedback],
        [record.userId, JSON.stringify(record)],
      ),
      context,
    );
    const recorded = reply[0] === 1;
    if (recorded) {
      await this.ctx.redis.zadd(this.ctx.keys.feedbackIndex, record.at, `${record.runId} ${record.userId}`);
    }
    return { recorded, record: parseRecord(reply[1], context) };
  }

  /**
   * Adds the person's comment to their feedback on the run. Throws StoreError `no_feedback` when they
   * gave none, `not_found` when the run is gone.
   */
  async comment(runId: string, userId: string, comment: string, now: number): Promise<FeedbackRecord> {
    const keys = this.ctx.keys.run(runId);
    const text = comment.trim().slice(0, MAX_FEEDBACK_COMMENT);
    const reply = await this.ctx.script('commentFeedback', [keys.header, keys.feedback], [userId, text, now]);
    if (typeof reply === 'number') throw scriptError('commentFeedback', reply, { runId, userId });
    return parseRecord(reply, { runId, userId });
  }

  /** The feedback on one run, oldest first. */
  async forRun(runId: string): Promise<FeedbackRecord[]> {
    const all = await this.ctx.redis.hgetall(this.ctx.keys.run(runId).feedback);
    return Object.values(all)
      .map((text) => parseRecord(text, { runId }))
      .sort((a, b) => a.at - b.at);
  }

  /** Feedback given from `from` to `to` (ms, inclusive), oldest first; records whose run is gone are left out. */
  async since(
    from: number,
    to = Number.POSITIVE_INFINITY,
    limit = FEEDBACK_LIST_LIMIT,
  ): Promise<FeedbackRecord[]> {
    const entries = await this.ctx.redis.zrangebyscore(
      this.ctx.keys.feedbackIndex,
      from,
      Number.isFinite(to) ? to : '+inf',
      'LIMIT',
      0,
      limit,
    );
    const records = await Promise.all(
      entries.map(async (entry) => {
        const [runId, userId] = entry.split(' ');
        if (!runId || !userId || !isRunId(runId)) return null;
        const text = await this.ctx.redis.hget(this.ctx.keys.run(runId).feedback, userId);
        return text === null ? null : parseRecord(text, { runId, userId });
      }),
    );
    return records.filter((r): r is FeedbackRecord => r !== null);
  }
}
