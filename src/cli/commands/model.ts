import { loadEnvVars } from '../../config/env.js';
import { ConfigError } from '../../config/errors.js';
import { loadPolicy } from '../../config/policy.js';
import { checkModel, modelCheckText } from '../../doctor/model-check.js';
import { buildTools } from '../../tools/registry.js';
import { parseCommandLine } from '../args.js';
import type { Command } from '../command.js';
import { UsageError } from '../errors.js';
import { json, write } from '../format.js';

const help = `Usage: loopgate model check [path] [--json]

Sends the policy's real tool list to the configured model endpoint (OPENAI_BASE_URL, OPENAI_API_KEY,
OPENAI_MODEL or model.name, with OPENAI_TIMEOUT_MS and OPENAI_MAX_RETRIES) with a tiny prompt, twice,
and reports whether the server accepted the tools, which schema form it needed (model.schemas; a server
refusing the schemas gets the lenient form), whether the tool calls it returned parse and pass the full
schema, and whether it reports usage and cached tokens. Built-in and custom tools only (not MCP tools).
Exits 1 when the server did not accept the request.

  path     the policy file; default LOOPGATE_CONFIG, else ./loopgate.yaml
  --json   print the report as JSON`;

const options = { json: { type: 'boolean' } } as const;

const noPosting = {
  postMessage: () => Promise.reject(new Error('model check does not post to Slack')),
};

export const modelCommand: Command = {
  name: 'model',
  help,
  async run(argv, ctx) {
    const line = parseCommandLine(argv, options, help, { min: 0, max: 2 });
    if (line === null) return write(ctx.stdout, `${help}\n`).then(() => 0);
    const [sub, path = ctx.env.LOOPGATE_CONFIG || './loopgate.yaml'] = line.positionals;
    if (sub !== 'check') throw new UsageError(`expected 'model check', not 'model ${sub ?? ''}'`, help);
    const policy = await loadPolicy(path, { env: ctx.env });
    const env = loadEnvVars(ctx.env, [
      'OPENAI_BASE_URL',
      'OPENAI_MAX_RETRIES',
      'OPENAI_TIMEOUT_MS',
      'OPENAI_MODEL',
      'OPENAI_API_KEY',
    ]);
    if (!env.OPENAI_API_KEY) {
      throw new ConfigError('environment', [
        { key: 'OPENAI_API_KEY', problem: 'required to reach the model' },
      ]);
    }
    if (!policy.model.name && !env.OPENAI_MODEL) {
      throw new ConfigError('environment', [
        { key: 'OPENAI_MODEL', problem: 'required (or model.name in the policy)' },
      ]);
    }
    const tools = await buildTools(policy, { env: ctx.env, slack: noPosting });
    const report = await checkModel({ env: { ...env, OPENAI_API_KEY: env.OPENAI_API_KEY }, policy, tools });
    await write(ctx.stdout, line.values.json ? json(report) : `${modelCheckText(report)}\n`);
    return report.accepted ? 0 : 1;
  },
};
