import { ConfigError } from '../../config/errors.js';
import { loadPolicy } from '../../config/policy.js';
import { buildTools } from '../../tools/registry.js';
import { parseCommandLine } from '../args.js';
import type { Command } from '../command.js';
import { UsageError } from '../errors.js';
import { json, write } from '../format.js';
import { listMcpTools, mcpListingText } from '../mcp-report.js';

const help = `Usage: loopgate mcp list [path] [--json]

Connects to each MCP server of the policy file (mcp.servers) and prints the tools it lists, each with the
effect loopgate applies (read runs at once; write and notify wait for an approval) and why: an override
in the policy, the server's readOnlyHint annotation, or the default (no annotation: a write). Refused
tools are listed with the reason. Exits 1 when a server cannot be reached or a tool takes another tool's
name (the workers refuse to start then).

  path     the policy file; default LOOPGATE_CONFIG, else ./loopgate.yaml
  --json   print {"servers": {...}, "tools": [...], "problems": [...]}`;

const options = { json: { type: 'boolean' } } as const;

const noPosting = {
  postMessage: () => Promise.reject(new Error('loopgate mcp list does not post to Slack')),
};

export const mcpCommand: Command = {
  name: 'mcp',
  help,
  async run(argv, ctx) {
    const line = parseCommandLine(argv, options, help, { min: 1, max: 2 });
    if (line === null) return write(ctx.stdout, `${help}\n`).then(() => 0);
    const [sub, pathArg] = line.positionals;
    if (sub !== 'list') throw new UsageError(`unknown subcommand ${sub ?? '(none)'}; expected: list`, help);
    const path = pathArg ?? (ctx.env.LOOPGATE_CONFIG || './loopgate.yaml');
    try {
      const policy = await loadPolicy(path, { env: ctx.env });
      const own = await buildTools(policy, { env: ctx.env, slack: noPosting });
      const listing = await listMcpTools(policy, ctx.env, new Set(own.keys()));
      const text = mcpListingText(listing) || `No MCP servers in ${path} (mcp.servers).\n`;
      await write(ctx.stdout, line.values.json ? json(listing) : text);
      for (const p of listing.problems) await write(ctx.stderr, `loopgate: ${p.key}: ${p.problem}\n`);
      return listing.problems.length === 0 ? 0 : 1;
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      await write(ctx.stderr, `loopgate: ${error.message}\n`);
      return 1;
    }
  },
};
