import { parseCommandLine } from '../args.js';
import type { Command } from '../command.js';
import { json, shorten, table, utc, write } from '../format.js';
import { parseTimeRange } from '../time-range.js';

const help = `Usage: loopgate feedback --since <time> [--until <time>] [--json]

Lists the feedback people gave on answers (the 👍 / 👎 buttons under each answer), oldest first: when,
the value (good or bad), who, the run, the channel and the comment they added, if any. One record per
person and run: their first click counts. Ends with the totals.

  --since <time>  start of the range (inclusive), required
  --until <time>  end of the range (inclusive), default now
  --json          one JSON document: {"since", "until", "counts": {"good", "bad"}, "feedback": [records]}
                  (record fields: runId, userId, value, at, channelId, comment, commentedAt; times in ms)

<time> is an ISO 8601 date or date-time (2026-01-31, 2026-01-31T09:30:00Z; no offset means UTC) or a span
back from now: 90s, 30m, 24h, 7d, 2w. Feedback is kept as long as its run (RETENTION_DAYS).`;

const options = {
  since: { type: 'string' },
  until: { type: 'string' },
  json: { type: 'boolean' },
} as const;

export const feedbackCommand: Command = {
  name: 'feedback',
  help,
  async run(argv, ctx) {
    const line = parseCommandLine(argv, options, help);
    if (line === null) return write(ctx.stdout, `${help}\n`).then(() => 0);
    const now = ctx.now();
    const { from, to } = parseTimeRange(line.values, now, help);

    const store = await ctx.store();
    const records = await store.feedback.since(from, to);
    const counts = {
      good: records.filter((r) => r.value === 'good').length,
      bad: records.filter((r) => r.value === 'bad').length,
    };
    if (line.values.json) {
      await write(ctx.stdout, json({ since: from, until: to, counts, feedback: records }));
      return 0;
    }
    if (records.length === 0) {
      await write(ctx.stdout, `No feedback from ${utc(from)} to ${utc(to)}.\n`);
      return 0;
    }
    const rows = records.map((r) => [
      utc(r.at),
      r.value,
      r.userId,
      r.runId,
      r.channelId ?? '-',
      r.comment ? shorten(r.comment, 120) : '',
    ]);
    await write(ctx.stdout, `${table(['WHEN', 'VALUE', 'USER', 'RUN', 'CHANNEL', 'COMMENT'], rows)}\n`);
    const share = Math.round((100 * counts.good) / records.length);
    await write(
      ctx.stdout,
      `\n${records.length} in all: ${counts.good} good, ${counts.bad} bad (${share}% good)\n`,
    );
    return 0;
  },
};
