import type { ApprovalRecord } from '../../store/index.js';
import { parseCommandLine, positiveInt } from '../args.js';
import { paintFor } from '../attention.js';
import type { Command } from '../command.js';
import { duration, json, relative, table, utc, write } from '../format.js';
import { pendingApprovals } from '../pending-approvals.js';

const help = `Usage: loopgate approvals [--all] [--limit N] [--json]

Lists approvals waiting for a decision, oldest first: how long each has waited, approval id, tool, run,
requester, who may approve, when it expires (UTC), and a link to its card in Slack. Colours only on a
terminal (never with NO_COLOR set).

  --all         also list approvals past their expiry that are still recorded as pending (a worker
                normally expires them at once: any shown point at stopped workers or a lost expire job)
  --limit N     at most N approvals (default 50, at most 1000)
  --json        print a JSON array of the approval records, each with ageMs and link`;

const options = { all: { type: 'boolean' }, limit: { type: 'string' }, json: { type: 'boolean' } } as const;

export const approvalsCommand: Command = {
  name: 'approvals',
  help,
  async run(argv, ctx) {
    const line = parseCommandLine(argv, options, help);
    if (line === null) return write(ctx.stdout, `${help}\n`).then(() => 0);
    const limit = positiveInt(line.values.limit, 'limit', 1_000, 50, help);
    const store = await ctx.store();
    const now = ctx.now();
    const records = (await pendingApprovals(store, now, limit, line.values.all === true)).sort(
      (a, b) =>
        a.createdAt - b.createdAt || a.expiresAt - b.expiresAt || a.approvalId.localeCompare(b.approvalId),
    );
    const long = paintFor(ctx.stdout, ctx.env);
    await write(
      ctx.stdout,
      line.values.json
        ? json(records.map((r) => ({ ...r, ageMs: Math.max(0, now - r.createdAt), link: cardLink(r) })))
        : approvalsText(records, now, (text, waitedMs) =>
            waitedMs >= LONG_WAIT_MS ? long.status('failed', text) : long.status('awaiting_approval', text),
          ),
    );
    return 0;
  },
};

/** Waits this long or longer are shown in red on a terminal (the dashboard's alert threshold). */
const LONG_WAIT_MS = 30 * 60_000;

/**
 * A link to the card: Slack's archive URL of the message (channel and ts), which opens it in the
 * workspace of whoever is signed in. null before the card is posted.
 */
function cardLink(record: ApprovalRecord): string | null {
  if (!record.card) return null;
  return `https://slack.com/archives/${record.card.channel}/p${record.card.ts.replace('.', '')}`;
}

function approversText(record: ApprovalRecord): string {
  const ids = [...record.approvers.users, ...record.approvers.groups];
  return ids.length === 0 ? '(none)' : ids.join(',');
}

function approvalsText(
  records: readonly ApprovalRecord[],
  now: number,
  paintAge: (text: string, waitedMs: number) => string,
): string {
  if (records.length === 0) return 'No approvals are waiting.\n';
  const header = ['WAITING', 'APPROVAL', 'TOOL', 'RUN', 'REQUESTER', 'APPROVERS', 'EXPIRES', 'LINK'];
  const waited = records.map((r) => Math.max(0, now - r.createdAt));
  const ages = waited.map((ms) => duration(ms));
  const rows = records.map((r, i) => [
    ages[i]!,
    r.approvalId,
    `${r.tool} [${r.effect}]`,
    r.runId,
    r.requester,
    approversText(r),
    `${utc(r.expiresAt)} (${r.expiresAt < now ? 'OVERDUE, ' : ''}${relative(r.expiresAt, now)})`,
    cardLink(r) ?? '-',
  ]);
  const [head, ...lines] = table(header, rows).split('\n');
  // Colour is added after alignment: escape codes take no room on a terminal.
  const coloured = lines.map((line, i) => paintAge(ages[i]!, waited[i]!) + line.slice(ages[i]!.length));
  return `${[head, ...coloured].join('\n')}\n`;
}
