/**
 * `loopgate <command> [options]`: dispatch, the shared store connection, and the mapping of failures to
 * exit statuses (0 ok, 1 error, 2 usage). Every message names what to fix; no stack traces for expected
 * failures.
 */
import type { Writable } from 'node:stream';
import { ConfigError } from '../config/errors.js';
import { LoopgateError } from '../loop/errors.js';
import type { Store } from '../store/index.js';
import type { CliContext, Command, CommandEntry } from './command.js';
import { EXIT, UsageError } from './errors.js';
import { write } from './format.js';

const COMMANDS: readonly CommandEntry[] = [
  {
    name: 'init',
    summary: 'write .env and a starter loopgate.yaml (Socket Mode by default; flags or prompts)',
    load: async () => (await import('./commands/init.js')).initCommand,
  },
  {
    name: 'doctor',
    summary: 'check the configuration against the real workspace, model, MCP servers and Redis',
    load: async () => (await import('./commands/doctor.js')).doctorCommand,
  },
  {
    name: 'runs',
    summary: 'list recent runs (of a channel, of a requester, or everywhere)',
    load: async () => (await import('./commands/runs.js')).runsCommand,
  },
  {
    name: 'trace',
    summary: "show one run's steps, tool calls, approvals and answer",
    load: async () => (await import('./commands/trace.js')).traceCommand,
  },
  {
    name: 'approvals',
    summary: 'list approvals waiting for a decision',
    load: async () => (await import('./commands/approvals.js')).approvalsCommand,
  },
  {
    name: 'audit',
    summary: 'export the audit log of decisions for a time range as JSON Lines',
    load: async () => (await import('./commands/audit.js')).auditCommand,
  },
  {
    name: 'feedback',
    summary: 'list the feedback given on answers (👍 / 👎, comments) for a time range, with totals',
    load: async () => (await import('./commands/feedback.js')).feedbackCommand,
  },
  {
    name: 'check-config',
    summary: 'validate a policy file without starting anything (no Redis needed)',
    load: async () => (await import('./commands/check-config.js')).checkConfigCommand,
  },
  {
    name: 'policy',
    summary:
      "policy test <tool> '<json args>': which rule decides such a call, and why; policy replay: what a proposed policy would have decided",
    load: async () => (await import('./commands/policy.js')).policyCommand,
  },
  {
    name: 'model',
    summary: "model check: does the model endpoint accept the policy's tools, and which schema form",
    load: async () => (await import('./commands/model.js')).modelCommand,
  },
  {
    name: 'shadow',
    summary:
      'shadow report: what people would have decided on calls in shadow mode, and allow rules they support',
    load: async () => (await import('./commands/shadow.js')).shadowCommand,
  },
  {
    name: 'mcp',
    summary: "list the MCP servers' tools with the effect loopgate applies and why",
    load: async () => (await import('./commands/mcp.js')).mcpCommand,
  },
];

const MAIN_HELP = `Usage: loopgate <command> [options]

Inspect a loopgate installation from a terminal. Reads REDIS_URL (or REDIS_CLUSTER_NODES, REDIS_TLS),
REDIS_USERNAME, REDIS_PASSWORD, LOOPGATE_PREFIX and RETENTION_DAYS from the environment (and from .env
in the working directory, like the bot and the workers).

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(14)}${c.summary}`).join('\n')}

Run 'loopgate <command> --help' for a command's options, 'loopgate --version' for the version.
Exit status: 0 ok, 1 error, 2 wrong usage.`;

interface CliIo {
  stdout: Writable;
  stderr: Writable;
  env: Readonly<Record<string, string | undefined>>;
  now(): number;
}

export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-v' || name === 'version') {
    const { loopgateVersion } = await import('./version.js');
    await write(io.stdout, `loopgate ${loopgateVersion()}\n`);
    return EXIT.ok;
  }
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' ? COMMANDS.find((c) => c.name === rest[0]) : undefined;
    const text = topic ? (await topic.load()).help : MAIN_HELP;
    await write(name === undefined ? io.stderr : io.stdout, `${text}\n`);
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  const entry = COMMANDS.find((c) => c.name === name);
  if (entry === undefined) {
    await write(io.stderr, `loopgate: unknown command ${JSON.stringify(name)}\n\n${MAIN_HELP}\n`);
    return EXIT.usage;
  }
  const command = await entry.load();

  let opened: Promise<{ store: Store; close(): Promise<void> }> | undefined;
  const ctx: CliContext = {
    ...io,
    store: async () => {
      opened ??= import('./open-store.js').then(({ openStore }) => openStore(io.env));
      return (await opened).store;
    },
  };
  try {
    return await command.run(rest, ctx);
  } catch (error) {
    return report(error, command, io.stderr);
  } finally {
    if (opened) await opened.then((o) => o.close()).catch(() => {});
  }
}

async function report(error: unknown, command: Command, stderr: Writable): Promise<number> {
  if (error instanceof UsageError) {
    const usage = error.usage.split('\n')[0] ?? '';
    await write(
      stderr,
      `loopgate ${command.name}: ${error.message}\n${usage}\nRun 'loopgate ${command.name} --help' for details.\n`,
    );
    return EXIT.usage;
  }
  if (error instanceof ConfigError) {
    await write(stderr, `loopgate: ${error.message}\n`);
    return EXIT.error;
  }
  if (error instanceof LoopgateError) {
    await write(stderr, `loopgate ${command.name}: ${error.message}\n`);
    return EXIT.error;
  }
  const message = error instanceof Error ? error.message : String(error);
  await write(stderr, `loopgate ${command.name}: unexpected error: ${message}\n`);
  return EXIT.error;
}
