/**
 * What `loopgate init` writes: a `.env` with the answers and a starter `loopgate.yaml` that passes
 * check-config as written. The starter policy enables only tools whose secrets were given (page_oncall
 * only with a PagerDuty routing key); the full loopgate.example.yaml stays the reference.
 */
import { stringify } from 'yaml';
import { z } from 'zod';
import { approverId } from '../approvers/approvers.js';
import { loadEnvVars } from '../config/env.js';
import { ConfigError } from '../config/errors.js';

const channelId = z.string().regex(/^[CG][A-Z0-9]{2,}$/, { error: 'expected a Slack channel id (C… or G…)' });

/** The answers, from flags or prompts. Empty strings count as not given. */
const initAnswers = z.object({
  slackBotToken: z.string().min(1, { error: 'required: the Bot User OAuth Token (xoxb-…)' }),
  slackSigningSecret: z.string().min(1, { error: "required: the app's signing secret" }),
  /** Socket Mode (the default) needs the app-level token; `http` receives request URLs instead. */
  mode: z.enum(['socket', 'http']),
  slackAppToken: z.string().optional(),
  openaiApiKey: z.string().min(1, { error: 'required: the API key of the model server' }),
  openaiBaseUrl: z.string().optional(),
  openaiModel: z.string().optional(),
  approvers: z.array(approverId).min(1, { error: 'expected at least one approver (U…, W… or S… id)' }),
  /** Where the bot answers and where post_message may write; empty: wherever it is invited, no post_message. */
  channels: z.array(channelId),
  /** With it, page_oncall is enabled (its secret in PD_ROUTING_KEY). */
  pagerdutyRoutingKey: z.string().optional(),
});
type InitAnswers = z.output<typeof initAnswers>;

/** Field of InitAnswers → the flag or variable named in problems. */
const KEY_NAMES: Record<string, string> = {
  slackBotToken: 'SLACK_BOT_TOKEN',
  slackSigningSecret: 'SLACK_SIGNING_SECRET',
  slackAppToken: 'SLACK_APP_TOKEN',
  openaiApiKey: 'OPENAI_API_KEY',
  openaiBaseUrl: 'OPENAI_BASE_URL',
  openaiModel: 'OPENAI_MODEL',
  approvers: 'approvers',
  channels: 'channels',
};

interface StarterFiles {
  env: string;
  policy: string;
}

/**
 * Validates the answers (the same rules as start-up applies to the variables) and renders the files.
 * @throws ConfigError listing every problem at once.
 */
export function starterFiles(input: unknown): StarterFiles {
  const parsed = initAnswers.safeParse(input);
  if (!parsed.success) {
    throw new ConfigError(
      'loopgate init',
      parsed.error.issues.map((issue) => {
        const field = String(issue.path[0] ?? '');
        return { key: KEY_NAMES[field] ?? field, problem: issue.message };
      }),
    );
  }
  const a = parsed.data;
  if (a.mode === 'socket' && !a.slackAppToken) {
    throw new ConfigError('loopgate init', [
      {
        key: 'SLACK_APP_TOKEN',
        problem:
          'required for Socket Mode (an app-level token, xapp-…, with connections:write); or choose HTTP request URLs',
      },
    ]);
  }
  const vars: Record<string, string | undefined> = {
    SLACK_BOT_TOKEN: a.slackBotToken,
    SLACK_SIGNING_SECRET: a.slackSigningSecret,
    SLACK_APP_TOKEN: a.mode === 'socket' ? a.slackAppToken : undefined,
    OPENAI_API_KEY: a.openaiApiKey,
    OPENAI_BASE_URL: a.openaiBaseUrl || undefined,
    OPENAI_MODEL: a.openaiModel || undefined,
    LOOPGATE_CONFIG: './loopgate.yaml',
  };
  // The very checks start-up runs, so a token of the wrong kind is refused here, not at `npm start`.
  loadEnvVars(vars, [
    'SLACK_BOT_TOKEN',
    'SLACK_SIGNING_SECRET',
    'SLACK_APP_TOKEN',
    'OPENAI_API_KEY',
    'OPENAI_BASE_URL',
    'OPENAI_MODEL',
  ]);
  if (a.pagerdutyRoutingKey) vars.PD_ROUTING_KEY = a.pagerdutyRoutingKey;
  return { env: envText(vars, a.mode), policy: policyText(a) };
}

function envText(vars: Record<string, string | undefined>, mode: InitAnswers['mode']): string {
  const lines = [
    '# Written by `loopgate init`. Secrets: keep this file out of git (.gitignore lists it).',
    '# The real environment wins over this file; an empty variable there counts as unset.',
    mode === 'socket'
      ? '# Socket Mode: SLACK_APP_TOKEN is set, so the bot connects out to Slack; no public URL needed.'
      : '# HTTP request URLs: Slack sends events to https://<your host>/slack/events (PORT, default 3000).',
  ];
  for (const [name, value] of Object.entries(vars)) {
    if (value !== undefined) lines.push(`${name}=${quote(value)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** dotenv reads double-quoted values verbatim except for \n escapes; plain ones need no quotes. */
function quote(value: string): string {
  return /^[\w@%+=:,./-]*$/.test(value) ? value : JSON.stringify(value);
}

function policyText(a: InitAnswers): string {
  const tools: Record<string, unknown> = { current_time: {} };
  // Copies: one list written twice would come out as a YAML anchor and alias.
  if (a.channels.length > 0) tools.post_message = { channels: [...a.channels] };
  if (a.pagerdutyRoutingKey) tools.page_oncall = { routingKeyEnv: 'PD_ROUTING_KEY' };
  const policy = {
    budgets: { maxSteps: 12, deadlineSeconds: 300, maxTokens: 200_000 },
    approvals: { approvers: a.approvers, selfApproval: false, expiresAfterMinutes: 60 },
    ...(a.channels.length > 0 ? { channels: { allow: [...a.channels] } } : {}),
    tools,
  };
  return [
    '# Starter policy written by `loopgate init`; `npx loopgate check-config` validates it and',
    '# `npx loopgate doctor` checks it against your workspace and model. The full reference of keys is',
    '# loopgate.example.yaml and docs/approvals.md. The model is OPENAI_MODEL from .env (set model.name',
    '# here to pin one). Secrets stay in .env: keys ending in Env name a variable.',
    stringify(policy).trimEnd(),
    '',
  ].join('\n');
}
