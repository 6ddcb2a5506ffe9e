import { ConfigError } from '../../config/errors.js';
import { loadPolicy } from '../../config/policy.js';
import { explanationText } from '../../policy/describe.js';
import { explainGate } from '../../policy/gate.js';
import { parseCommandLine } from '../args.js';
import type { Command } from '../command.js';
import { UsageError } from '../errors.js';
import { json, write } from '../format.js';

const help = `Usage: loopgate policy test <tool> '<json args>' [--config <path>] [--json]

Says which rule of the policy decides a call of <tool> with these arguments, and why: each rule of the
tool tried in order (first match wins) with the condition that did not hold, then the decision: allowed
by a rule, denied by a rule (and what the model is told), or asked of whom (approvers, quorum, expiry,
reminders, escalation, grants). No rule matching means the tool's default: ask its approvers.
Nothing runs and nothing is stored; the arguments are taken as given (not checked against the tool's
schema).

  --config <path>  the policy file; default LOOPGATE_CONFIG, else ./loopgate.yaml
  --json           print {"tool", "tried": [...], "decision": {...}}`;

const options = { config: { type: 'string' }, json: { type: 'boolean' } } as const;

export const policyCommand: Command = {
  name: 'policy',
  help,
  async run(argv, ctx) {
    const line = parseCommandLine(argv, options, help, { min: 0, max: 3 });
    if (line === null) return write(ctx.stdout, `${help}\n`).then(() => 0);
    const [sub, tool, argsText] = line.positionals;
    if (sub !== 'test')
      throw new UsageError(
        sub ? `unknown subcommand ${JSON.stringify(sub)}` : 'missing subcommand test',
        help,
      );
    if (!tool || argsText === undefined)
      throw new UsageError('expected a tool name and its arguments as JSON', help);
    let args: unknown;
    try {
      args = JSON.parse(argsText);
    } catch (error) {
      throw new UsageError(`the arguments are not JSON: ${(error as Error).message}`, help);
    }
    const path = line.values.config ?? (ctx.env.LOOPGATE_CONFIG || './loopgate.yaml');
    try {
      const policy = await loadPolicy(path, { env: ctx.env });
      const { tried, decision } = explainGate(policy, tool, args);
      await write(
        ctx.stdout,
        line.values.json
          ? json({ tool, tried, decision })
          : `${tool} ${JSON.stringify(args)}\n${explanationText(tool, tried, decision)}`,
      );
      return 0;
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      await write(ctx.stderr, `loopgate: ${error.message}\n`);
      return 1;
    }
  },
};
