import { askToolName } from '../../agents/ask-tool.js';
import { unknownAgentTools } from '../../config/agents.js';
import { ConfigError } from '../../config/errors.js';
import { loadPolicy } from '../../config/policy.js';
import { channelToolWarnings } from '../../policy/channel-rules.js';
import { ruleSchemaWarnings } from '../../policy/rule-types.js';
import { envReads } from '../../tools/custom/env-reads.js';
import { buildTools } from '../../tools/registry.js';
import { ruleArgSchemas } from '../../tools/rule-schemas.js';
import { parseCommandLine } from '../args.js';
import type { Command } from '../command.js';
import { json, write } from '../format.js';
import { listMcpTools, mcpListingText } from '../mcp-report.js';
import { summarisePolicy, summaryText } from '../policy-summary.js';

const help = `Usage: loopgate check-config [path] [--json]

Validates a policy/tools file exactly as the bot and the workers do at start-up, without Redis, Slack or
the model: every key, the secrets it names (keys ending in Env must name a set environment variable;
.env in the working directory is read first), the runbook directory, and the custom tool modules (files
or packages), which are imported (their top-level code runs) and checked, with the secrets each tool
declares (each must be set) and a warning for every line of their code reading process.env, and each MCP server (mcp.servers) is connected
and its tools listed with the effect loopgate applies and why. Prints OK and a summary (tools and their
approvers, budgets, channels, sub-agents, MCP tools) and warnings about rules that cannot apply as
written to their tool's argument types (a condition on an argument the tool does not have, a comparison
on a string, a glob on a number, a value the schema never allows, an index into a list), or every problem with its key (an MCP server that
cannot be reached, an MCP tool taking another tool's name, a tool an agent lists that does not exist),
and exits 1.

  path     the file to check; default LOOPGATE_CONFIG, else ./loopgate.yaml
  --json   print {"ok": true, ...summary} or {"ok": false, "source", "problems": [{key, problem}]}`;

const options = { json: { type: 'boolean' } } as const;

/** Tools are built but never run: post_message gets a poster that refuses to post. */
const noPosting = {
  postMessage: () => Promise.reject(new Error('check-config does not post to Slack')),
};

/** A custom tool reading `process.env` bypasses the secret check and the log redaction. */
async function envReadWarnings(custom: readonly { path: string; package?: string | undefined }[]) {
  const warnings: { key: string; problem: string }[] = [];
  for (const [i, entry] of custom.entries()) {
    for (const read of await envReads(entry)) {
      warnings.push({
        key: `custom[${i}]`,
        problem: `${read.file}:${read.line} reads process.env: unchecked and not redacted; list the variable in the tool's secrets and read it with ctx.secret(name)`,
      });
    }
  }
  return warnings;
}

export const checkConfigCommand: Command = {
  name: 'check-config',
  help,
  async run(argv, ctx) {
    const line = parseCommandLine(argv, options, help, { min: 0, max: 1 });
    if (line === null) return write(ctx.stdout, `${help}\n`).then(() => 0);
    const path = line.positionals[0] ?? (ctx.env.LOOPGATE_CONFIG || './loopgate.yaml');
    try {
      const policy = await loadPolicy(path, { env: ctx.env });
      const tools = await buildTools(policy, { env: ctx.env, slack: noPosting });
      const mcp = await listMcpTools(policy, ctx.env, new Set(tools.keys()));
      if (mcp.problems.length > 0) throw new ConfigError(policy.source, mcp.problems);
      const agentProblems = unknownAgentTools(
        policy.agents,
        new Set([...tools.keys(), ...mcp.tools.filter((t) => t.refused === null).map((t) => t.name)]),
        Object.keys(policy.mcp?.servers ?? {}),
      );
      if (agentProblems.length > 0) throw new ConfigError(policy.source, agentProblems);
      const warnings = [
        ...ruleSchemaWarnings(policy.rules, ruleArgSchemas(tools, policy.tools.run_action?.actions)),
        ...(await envReadWarnings(policy.custom)),
        ...channelToolWarnings(
          policy.channels.rules,
          [...tools.keys(), ...mcp.tools.map((t) => t.name), ...Object.keys(policy.agents).map(askToolName)],
          Object.keys(policy.mcp?.servers ?? {}),
        ),
      ];
      const summary = {
        ...summarisePolicy(policy, tools),
        warnings,
        ...(policy.mcp ? { mcp: { servers: mcp.servers, tools: mcp.tools } } : {}),
      };
      const warned = warnings.map((w) => `  warning: ${w.key}: ${w.problem}\n`).join('');
      await write(
        ctx.stdout,
        line.values.json ? json(summary) : summaryText(summary) + warned + mcpListingText(mcp),
      );
      return 0;
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      if (line.values.json) {
        await write(ctx.stdout, json({ ok: false, source: error.source, problems: error.problems }));
      } else {
        await write(ctx.stderr, `loopgate: ${error.message}\n`);
      }
      return 1;
    }
  },
};
