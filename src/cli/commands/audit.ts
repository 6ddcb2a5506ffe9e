import { createWriteStream } from 'node:fs';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { parseCommandLine } from '../args.js';
import { auditBetween } from '../audit-range.js';
import type { Command } from '../command.js';
import { CliError } from '../errors.js';
import { utc, write } from '../format.js';
import { parseTimeRange } from '../time-range.js';

const help = `Usage: loopgate audit --since <time> [--until <time>] [--break-glass] [--out <file>]

Exports the audit log (every approval decision: approved, rejected, expired, cancelled, superseded by an
edit; and the events around them: quorum votes, edits, reminders, escalations, grants created and revoked)
as JSON Lines, oldest first: one object per line with the stream entry id and the entry's fields
(approvalId, runId, tool, argsHash, requester, decider, decision, reason, requestedAt, decidedAt,
permalink, event, via (rule|grant), rule, quorum, votes, grantId, editedArgsHash, originalArgsHash, note,
breakGlass, incident, reviewed; times in ms).

  --since <time>  start of the range (inclusive), required
  --until <time>  end of the range (inclusive), default now
  --break-glass   only the decisions taken by breaking glass (a deny rule overridden for one call; each
                  has breakGlass "true", its incident and reason, and reviewed "false": flagged for review)
  --out <file>    write to <file> (replaced if it exists) instead of standard output

<time> is an ISO 8601 date or date-time (2026-01-31, 2026-01-31T09:30:00Z; no offset means UTC) or a span
back from now: 90s, 30m, 24h, 7d, 2w. The range applies to when each entry was logged (its stream id),
which is the moment of the decision. The stream keeps about the newest 100,000 entries.`;

const options = {
  since: { type: 'string' },
  until: { type: 'string' },
  out: { type: 'string' },
  'break-glass': { type: 'boolean' },
} as const;

export const auditCommand: Command = {
  name: 'audit',
  help,
  async run(argv, ctx) {
    const line = parseCommandLine(argv, options, help);
    if (line === null) return write(ctx.stdout, `${help}\n`).then(() => 0);
    const now = ctx.now();
    const { out } = line.values;
    const onlyBreakGlass = line.values['break-glass'] === true;
    const { from, to } = parseTimeRange(line.values, now, help);

    const store = await ctx.store();
    const target = out === undefined ? ctx.stdout : await openOut(out);
    let count = 0;
    try {
      for await (const { id, entry } of auditBetween(store.context, from, to)) {
        if (onlyBreakGlass && entry.breakGlass !== 'true') continue;
        await write(target, `${JSON.stringify({ id, ...entry })}\n`);
        count += 1;
      }
    } finally {
      if (target !== ctx.stdout) {
        target.end();
        await finished(target);
      }
    }
    if (out !== undefined) {
      await write(ctx.stderr, `wrote ${count} audit entries (${utc(from)} to ${utc(to)}) to ${out}\n`);
    }
    return 0;
  },
};

async function openOut(path: string): Promise<Writable> {
  const stream = createWriteStream(path, { flags: 'w' });
  await new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', (error) =>
      reject(new CliError(`cannot write ${path}: ${error.message}`, { cause: error })),
    );
  });
  return stream;
}
