import { parseCommandLine } from '../args.js';
import type { Command } from '../command.js';
import { UsageError } from '../errors.js';
import { json, write } from '../format.js';
import { parseTimeRange } from '../time-range.js';

const help = `Usage: loopgate shadow report --since <time> [--until <time>] [--min-calls <n>] [--json]

The calls shown in shadow mode from --since to --until (read from the audit log; needs REDIS_URL), per
tool and rule: how many, how many people said they would approve, would reject or left undecided, the
acceptance rate (would approve among decided calls), and the time to decide (p50, p95). For each tool and
rule whose decided calls were all accepted (at least --min-calls of them, default 3), prints an allow rule
as YAML that would have let those calls through, with the evidence; its conditions are the argument
values every accepted call shared. Nothing runs and nothing is stored.

  --since <time>      start of the range (ISO 8601, or a span back from now: 24h, 14d)
  --until <time>      end of the range, default now
  --min-calls <n>     accepted calls needed before an allow rule is suggested (default 3)
  --json              print the report as JSON`;

const options = {
  since: { type: 'string' },
  until: { type: 'string' },
  'min-calls': { type: 'string' },
  json: { type: 'boolean' },
} as const;

export const shadowCommand: Command = {
  name: 'shadow',
  help,
  async run(argv, ctx) {
    const line = parseCommandLine(argv, options, help, { min: 0, max: 1 });
    if (line === null) return write(ctx.stdout, `${help}\n`).then(() => 0);
    const [sub] = line.positionals;
    if (sub !== 'report')
      throw new UsageError(
        sub ? `unknown subcommand ${JSON.stringify(sub)}` : 'missing subcommand: report',
        help,
      );
    const range = parseTimeRange(line.values, ctx.now(), help);
    const minText = line.values['min-calls'];
    const minCalls = minText === undefined ? 3 : Number(minText);
    if (!Number.isInteger(minCalls) || minCalls < 1)
      throw new UsageError(
        `--min-calls: expected a whole number of at least 1, got ${JSON.stringify(minText)}`,
        help,
      );
    const { readShadowReport, shadowText } = await import('../shadow-report.js');
    const report = await readShadowReport(await ctx.store(), range, ctx.now(), minCalls);
    await write(ctx.stdout, line.values.json ? json(report) : shadowText(report));
    return 0;
  },
};
