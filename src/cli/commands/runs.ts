import type { ApprovalRecord, RunRow, Store } from '../../store/index.js';
import { parseCommandLine, positiveInt } from '../args.js';
import { type AttentionRow, attentionRows, type Paint, paintFor } from '../attention.js';
import type { Command } from '../command.js';
import { UsageError } from '../errors.js';
import { duration, json, shorten, table, write } from '../format.js';

/** Run headers a scope-less listing examines at most (SCAN walks the whole keyspace). */
const MAX_SCANNED_RUNS = 10_000;

const help = `Usage: loopgate runs [--channel C --team T | --user U --team T] [--limit N] [--json]

Lists recent runs, what needs attention first: runs waiting for people (longest wait first), working
runs (longest first), failed or stopped runs, then the rest (newest first). For each: id, status (and
stop reason), steps, cost, age, duration, whom a paused run waits on and for how long, requester,
channel, question. Colours only on a terminal (never with NO_COLOR set).

  --team T      Slack team (workspace) id, required with --channel or --user
  --channel C   runs started in channel C (the index /loopgate status reads)
  --user U      runs requested by user U
  --limit N     at most N runs (default 20, at most 1000)
  --json        print a JSON array instead of a table (with ageMs, durationMs, costUsd, waitingOn,
                waitingMs)

Without --channel or --user it lists runs across all channels by scanning the run headers in Redis. It
examines at most ${MAX_SCANNED_RUNS} headers (a note on stderr says when there were more), on a Redis
Cluster those of every primary. Runs are kept RETENTION_DAYS days after they end.`;

const options = {
  team: { type: 'string' },
  channel: { type: 'string' },
  user: { type: 'string' },
  limit: { type: 'string' },
  json: { type: 'boolean' },
} as const;

export const runsCommand: Command = {
  name: 'runs',
  help,
  async run(argv, ctx) {
    const line = parseCommandLine(argv, options, help);
    if (line === null) return write(ctx.stdout, `${help}\n`).then(() => 0);
    const { team, channel, user, json: asJson } = line.values;
    const limit = positiveInt(line.values.limit, 'limit', 1_000, 20, help);
    if (channel !== undefined && user !== undefined)
      throw new UsageError('give --channel or --user, not both', help);
    if ((channel !== undefined || user !== undefined) && team === undefined) {
      throw new UsageError(`--${channel !== undefined ? 'channel' : 'user'} needs --team`, help);
    }
    if (team !== undefined && channel === undefined && user === undefined) {
      throw new UsageError('--team goes with --channel or --user', help);
    }
    const store = await ctx.store();
    let runIds: string[];
    let note: string | null = null;
    try {
      if (team !== undefined && channel !== undefined) {
        runIds = await store.index.recentIds({ channel: { teamId: team, channelId: channel } }, limit);
      } else if (team !== undefined && user !== undefined) {
        runIds = await store.index.recentIds({ user: { teamId: team, userId: user } }, limit);
      } else {
        const scan = await store.index.scanRecentIds(limit, MAX_SCANNED_RUNS);
        runIds = scan.runIds;
        if (!scan.complete) {
          note = `note: examined ${scan.examined} run headers and stopped; older runs may be missing (use --channel or --user)`;
        }
      }
    } catch (error) {
      // The key scheme refuses ids that could not be Slack ids (they would alter a key's shape).
      if (error instanceof TypeError) throw new UsageError(error.message, help);
      throw error;
    }
    const { rows, unreadable } = await store.index.rows(runIds);
    for (const bad of unreadable)
      await write(ctx.stderr, `warning: run ${bad.runId} is unreadable: ${bad.problem}\n`);
    if (note !== null) await write(ctx.stderr, `${note}\n`);
    const now = ctx.now();
    const sorted = attentionRows(rows, await pendingByRun(store, rows), now);
    await write(ctx.stdout, asJson ? json(sorted) : runsText(sorted, paintFor(ctx.stdout, ctx.env)));
    return 0;
  },
};

/** The pending approvals of each paused run (one read per paused run). */
async function pendingByRun(store: Store, rows: readonly RunRow[]) {
  const paused = rows.filter((r) => r.status === 'awaiting_approval');
  const lists = await Promise.all(paused.map((r) => store.approvals.listForRun(r.runId)));
  return new Map<string, ApprovalRecord[]>(
    paused.map((r, i) => [r.runId, (lists[i] ?? []).filter((a) => a.status === 'pending')]),
  );
}

const statusText = (r: RunRow) =>
  r.stopReason && r.stopReason !== r.status ? `${r.status} (${r.stopReason})` : r.status;

function runsText(rows: readonly AttentionRow[], paint: Paint): string {
  if (rows.length === 0) return 'No runs found.\n';
  const header = [
    'RUN',
    'STATUS',
    'STEPS',
    'COST',
    'AGE',
    'DURATION',
    'WAITING ON',
    'WAITING',
    'REQUESTER',
    'CHANNEL',
    'QUESTION',
  ];
  const cells = rows.map((r) => [
    r.runId,
    statusText(r),
    String(r.step),
    `$${r.costUsd.toFixed(4)}`,
    duration(r.ageMs),
    duration(r.durationMs),
    r.waitingOn.length > 0 ? r.waitingOn.join(',') : '-',
    r.waitingMs === null ? '-' : duration(r.waitingMs),
    r.requester,
    `${r.teamId}/${r.channelId}`,
    shorten(r.question, 50),
  ]);
  const [head, ...lines] = table(header, cells).split('\n');
  // Colour is added after alignment: escape codes take no room on a terminal.
  const coloured = lines.map((line, i) => {
    const row = rows[i]!;
    const at = row.runId.length;
    const text = statusText(row);
    return line.slice(0, at) + line.slice(at).replace(text, paint.status(row.status, text));
  });
  return `${[head, ...coloured].join('\n')}\n`;
}
