import { access, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';
import { ConfigError } from '../../config/errors.js';
import { starterFiles } from '../../init/starter.js';
import { parseCommandLine } from '../args.js';
import type { CliContext, Command } from '../command.js';
import { CliError } from '../errors.js';
import { write } from '../format.js';

const help = `Usage: loopgate init [--bot-token xoxb-…] [--signing-secret S] [--app-token xapp-… | --http]
                     [--api-key K] [--base-url URL] [--model NAME] [--approvers U…,S…]
                     [--channels C…,C…] [--pagerduty-routing-key K] [--dir DIR] [--force] [--no-input]

Writes .env and a starter loopgate.yaml in DIR (default the working directory) that pass
'loopgate check-config' as written. Socket Mode by default (the bot connects out to Slack, no public URL
needed; give the app-level token); --http for HTTP request URLs instead. The starter policy enables
current_time, post_message to the channels given (approved by the approvers), and page_oncall only when
a PagerDuty routing key is given. Each value comes from its flag, else from the variable of the same name
in the environment (SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, SLACK_APP_TOKEN, OPENAI_API_KEY,
OPENAI_BASE_URL, OPENAI_MODEL, PD_ROUTING_KEY), else it is asked for when the terminal is interactive.
Then run 'loopgate doctor' to check them against the workspace and the model.

  --approvers      Slack user ids (U…/W…) and user group ids (S…), comma-separated
  --channels       channel ids (C…/G…) where the bot answers and post_message may write
  --force          overwrite an existing .env or loopgate.yaml
  --no-input       never prompt; report every missing value at once`;

const options = {
  'bot-token': { type: 'string' },
  'signing-secret': { type: 'string' },
  'app-token': { type: 'string' },
  http: { type: 'boolean' },
  'api-key': { type: 'string' },
  'base-url': { type: 'string' },
  model: { type: 'string' },
  approvers: { type: 'string' },
  channels: { type: 'string' },
  'pagerduty-routing-key': { type: 'string' },
  dir: { type: 'string' },
  force: { type: 'boolean' },
  'no-input': { type: 'boolean' },
} as const;

/**
 * The questions asked for values neither a flag nor the environment gave, in this order. Answers to
 * `secret` ones are not echoed: tokens typed at a prompt would stay in the scrollback and on a shared screen.
 */
const QUESTIONS = [
  {
    key: 'slackBotToken',
    text: 'Bot User OAuth Token (OAuth & Permissions page, xoxb-…)',
    optional: false,
    secret: true,
  },
  {
    key: 'slackSigningSecret',
    text: 'Signing secret (Basic Information page)',
    optional: false,
    secret: true,
  },
  {
    key: 'slackAppToken',
    text: 'App-level token for Socket Mode (xapp-…, connections:write)',
    optional: false,
    secret: true,
  },
  { key: 'openaiApiKey', text: 'API key of the model server', optional: false, secret: true },
  {
    key: 'openaiBaseUrl',
    text: 'Base URL of an OpenAI-compatible server (empty: OpenAI)',
    optional: true,
    secret: false,
  },
  { key: 'openaiModel', text: 'Model name (empty: gpt-4.1-mini)', optional: true, secret: false },
  {
    key: 'approvers',
    text: 'Approvers: Slack user ids U… and user group ids S…, comma-separated',
    optional: false,
    secret: false,
  },
  {
    key: 'channels',
    text: 'Channel ids C… for the bot and post_message, comma-separated (empty: none)',
    optional: true,
    secret: false,
  },
  {
    key: 'pagerdutyRoutingKey',
    text: 'PagerDuty routing key for page_oncall (empty: no paging)',
    optional: true,
    secret: true,
  },
] as const;

type Draft = Record<(typeof QUESTIONS)[number]['key'], string | undefined>;

const list = (text: string | undefined) =>
  (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** A line typed with echo off: the terminal's line editing is off too, so erase keys are applied here. */
function typedLine(raw: string): string {
  let line = '';
  for (const ch of raw) {
    if (ch === '\x7f' || ch === '\b') line = line.slice(0, -1);
    else if (ch >= ' ') line += ch;
  }
  return line;
}

/**
 * The terminal's input as lines, with echo switched off while a secret is read (raw mode). In raw mode
 * Enter arrives as `\r`, relayed as `\n`: readline would otherwise take an empty answer's `\n` right after
 * it for the second half of one `\r\n`. Ctrl-C still interrupts, as with echo on.
 */
function terminalLines() {
  const stdin = process.stdin;
  const relayed = new PassThrough();
  let raw = false;
  const relay = (chunk: Buffer) => {
    if (!raw) return relayed.write(chunk);
    const text = chunk.toString('utf8');
    if (text.includes('\x03')) {
      stdin.setRawMode(false);
      process.kill(process.pid, 'SIGINT');
      return;
    }
    relayed.write(text.replaceAll('\r', '\n'));
  };
  const end = () => relayed.end();
  stdin.on('data', relay);
  stdin.on('end', end);
  const rl = createInterface({ input: relayed, terminal: false });
  // Read through the iterator, which keeps lines typed or pasted ahead of their question.
  const lines = rl[Symbol.asyncIterator]();
  return {
    next: () => lines.next(),
    echo(on: boolean) {
      raw = !on;
      stdin.setRawMode(!on);
    },
    close() {
      if (raw) stdin.setRawMode(false);
      stdin.off('data', relay);
      stdin.off('end', end);
      stdin.pause();
      rl.close();
    },
  };
}

async function ask(draft: Draft, http: boolean, ctx: CliContext): Promise<void> {
  const lines = terminalLines();
  try {
    for (const q of QUESTIONS) {
      if (draft[q.key] !== undefined || (q.key === 'slackAppToken' && http)) continue;
      // Echo goes off before the question shows, so nothing typed after it is echoed.
      if (q.secret) lines.echo(false);
      await write(ctx.stderr, `${q.text}${q.secret ? ' (not shown as you type)' : ''}: `);
      const next = await lines.next();
      if (q.secret) {
        lines.echo(true);
        // Enter was not echoed either.
        await write(ctx.stderr, '\n');
      }
      // The end of the input: what is still missing is reported with the rest.
      if (next.done) break;
      const answer = typedLine(String(next.value)).trim();
      if (answer !== '' || q.optional) draft[q.key] = answer;
    }
  } finally {
    lines.close();
  }
}

type Values = NonNullable<ReturnType<typeof parseCommandLine<typeof options>>>['values'];

/** What the flags give, else the environment (an empty variable counts as unset). */
function draftFrom(v: Values, env: CliContext['env']): Draft {
  const fromEnv = (name: string) => env[name] || undefined;
  return {
    slackBotToken: v['bot-token'] ?? fromEnv('SLACK_BOT_TOKEN'),
    slackSigningSecret: v['signing-secret'] ?? fromEnv('SLACK_SIGNING_SECRET'),
    slackAppToken: v['app-token'] ?? fromEnv('SLACK_APP_TOKEN'),
    openaiApiKey: v['api-key'] ?? fromEnv('OPENAI_API_KEY'),
    openaiBaseUrl: v['base-url'] ?? fromEnv('OPENAI_BASE_URL'),
    openaiModel: v.model ?? fromEnv('OPENAI_MODEL'),
    approvers: v.approvers,
    channels: v.channels,
    pagerdutyRoutingKey: v['pagerduty-routing-key'] ?? fromEnv('PD_ROUTING_KEY'),
  };
}

/** The starter files for the answers; a ConfigError when they do not make a configuration. */
function filesFor(draft: Draft, http: boolean): ReturnType<typeof starterFiles> {
  return starterFiles({
    slackBotToken: draft.slackBotToken ?? '',
    slackSigningSecret: draft.slackSigningSecret ?? '',
    mode: http ? 'http' : 'socket',
    slackAppToken: draft.slackAppToken || undefined,
    openaiApiKey: draft.openaiApiKey ?? '',
    openaiBaseUrl: draft.openaiBaseUrl || undefined,
    openaiModel: draft.openaiModel || undefined,
    approvers: list(draft.approvers),
    channels: list(draft.channels),
    pagerdutyRoutingKey: draft.pagerdutyRoutingKey || undefined,
  });
}

/** Refuses to overwrite a file that exists. */
async function refuseExisting(paths: readonly string[]): Promise<void> {
  for (const path of paths) {
    if (await exists(path)) throw new CliError(`${path} exists; pass --force to overwrite it`);
  }
}

export const initCommand: Command = {
  name: 'init',
  help,
  async run(argv, ctx) {
    const line = parseCommandLine(argv, options, help);
    if (line === null) return write(ctx.stdout, `${help}\n`).then(() => 0);
    const v = line.values;
    const dir = v.dir ?? '.';
    const envPath = join(dir, '.env');
    const policyPath = join(dir, 'loopgate.yaml');
    if (!v.force) await refuseExisting([envPath, policyPath]);
    const draft = draftFrom(v, ctx.env);
    if (!v['no-input'] && process.stdin.isTTY) await ask(draft, v.http === true, ctx);
    let files: ReturnType<typeof starterFiles>;
    try {
      files = filesFor(draft, v.http === true);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      await write(ctx.stderr, `loopgate: ${error.message}\n`);
      return 1;
    }
    // .env holds secrets: readable by its owner only.
    await writeFile(envPath, files.env, { mode: 0o600 });
    await writeFile(policyPath, files.policy);
    await write(
      ctx.stdout,
      `wrote ${envPath} (${v.http ? 'HTTP request URLs' : 'Socket Mode'}) and ${policyPath}\n` +
        'next: npx loopgate check-config && npx loopgate doctor\n',
    );
    return 0;
  },
};
