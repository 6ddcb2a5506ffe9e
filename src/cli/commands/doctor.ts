import { runDoctor } from '../../doctor/run.js';
import type { CheckResult } from '../../doctor/types.js';
import { parseCommandLine } from '../args.js';
import type { Command } from '../command.js';
import { json, write } from '../format.js';

const help = `Usage: loopgate doctor [path] [--json]

Checks the configuration against the real workspace, model and Redis before the team relies on it,
one line per check: the environment and the policy (as check-config does); Slack: the bot token
(auth.test), the scopes granted against those the policy's features need, Socket Mode's app-level
token, each configured channel (exists, the bot is a member), each approver user and user group (exists,
group lookups permitted); each MCP server (starts, lists its tools with their effects); the model (answers
a tiny request offering the policy's real tool list, or the server's own words when it refuses); Redis
(reachable, version, maxmemory-policy noeviction, append-only file); the ports the processes listen on.

  path     the policy file; default LOOPGATE_CONFIG, else ./loopgate.yaml
  --json   print {"ok": bool, "checks": [{name, status, detail}]}

Exit status: 0 when nothing failed (warnings allowed), 1 when a check failed, 2 wrong usage.`;

const options = { json: { type: 'boolean' } } as const;

const MARK: Record<CheckResult['status'], { text: string; color: string }> = {
  ok: { text: 'ok  ', color: '32' },
  warn: { text: 'warn', color: '33' },
  fail: { text: 'FAIL', color: '31' },
  skip: { text: 'skip', color: '90' },
};

export const doctorCommand: Command = {
  name: 'doctor',
  help,
  async run(argv, ctx) {
    const line = parseCommandLine(argv, options, help, { min: 0, max: 1 });
    if (line === null) return write(ctx.stdout, `${help}\n`).then(() => 0);
    const checks = await runDoctor({
      env: ctx.env,
      ...(line.positionals[0] !== undefined ? { policyPath: line.positionals[0] } : {}),
    });
    const failed = checks.some((c) => c.status === 'fail');
    if (line.values.json) {
      await write(ctx.stdout, json({ ok: !failed, checks }));
    } else {
      const color = (ctx.stdout as { isTTY?: boolean }).isTTY === true;
      const width = Math.max(...checks.map((c) => c.name.length));
      const text = checks
        .map((c) => {
          const mark = color
            ? `\u001b[${MARK[c.status].color}m${MARK[c.status].text}\u001b[0m`
            : MARK[c.status].text;
          return `${mark} ${c.name.padEnd(width)}  ${c.detail}\n`;
        })
        .join('');
      await write(ctx.stdout, text);
    }
    return failed ? 1 : 0;
  },
};
