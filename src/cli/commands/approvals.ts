import type { ApprovalRecord } from '../../store/index.js';
import { parseCommandLine, positiveInt } from '../args.js';
import type { Command } from '../command.js';
import { json, relative, table, utc, write } from '../format.js';
import { pendingApprovals } from '../pending-approvals.js';

const help = `Usage: loopgate approvals [--all] [--limit N] [--json]

Lists approvals waiting for a decision, soonest expiry first: approval id, tool, run, requester, who may
approve, and when it expires (UTC).

  --all         also list approvals past their expiry that are still recorded as pending (a worker
                normally expires them at once: any shown point at stopped workers or a lost expire job)
  --limit N     at most N approvals (default 50, at most 1000)
  --json        print a JSON array of the approval records`;

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
    const records = await pendingApprovals(store, now, limit, line.values.all === true);
    await write(ctx.stdout, line.values.json ? json(records) : approvalsText(records, now));
    return 0;
  },
};

function approversText(record: ApprovalRecord): string {
  const ids = [...record.approvers.users, ...record.approvers.groups];
  return ids.length === 0 ? '(none)' : ids.join(',');
}

function approvalsText(records: readonly ApprovalRecord[], now: number): string {
  if (records.length === 0) return 'No approvals are waiting.\n';
  const header = ['APPROVAL', 'TOOL', 'RUN', 'REQUESTER', 'APPROVERS', 'EXPIRES'];
  const rows = records.map((r) => [
    r.approvalId,
    `${r.tool} [${r.effect}]`,
    r.runId,
    r.requester,
    approversText(r),
    `${utc(r.expiresAt)} (${r.expiresAt < now ? 'OVERDUE, ' : ''}${relative(r.expiresAt, now)})`,
  ]);
  return `${table(header, rows)}\n`;
}
