/**
 * What `npm run chat` takes from its environment (the real one, then `.env`, as every loopgate process
 * reads it): the configured model, which must have a key, and the configured policy file, validated up
 * front so a problem is named before any process starts.
 */
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { fillFromDotenv } from '../../src/config/env.js';
import { ConfigError } from '../../src/config/errors.js';
import { loadPolicy, type Policy } from '../../src/config/policy.js';
import { DemoError } from '../lib/errors.js';
import { DEFAULT_REDIS_URL } from '../lib/redis.js';
import type { ModelSettings } from '../lib/stage.js';

const NO_MODEL = `npm run chat talks to the configured model, and no OPENAI_API_KEY is set (in the environment or .env).
  OpenAI:                               OPENAI_API_KEY=sk-… npm run chat
  a local OpenAI-compatible server:     OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_API_KEY=local OPENAI_MODEL=<model> npm run chat
  (Ollama, vLLM, llama.cpp and LM Studio serve that API; the key is any non-empty text when the server wants none)
  no model at hand:                     npm run demo plays a scripted on-call story instead.`;

const modelEnv = z.object({
  OPENAI_API_KEY: z.string({ error: NO_MODEL }).min(1, { error: NO_MODEL }),
  OPENAI_BASE_URL: z
    .url({
      protocol: /^https?$/,
      error: 'OPENAI_BASE_URL: expected an http(s) URL, e.g. http://127.0.0.1:8000/v1',
    })
    .optional(),
  OPENAI_MODEL: z.string().min(1).optional(),
});

export interface ChatConfig {
  model: ModelSettings;
  redisUrl: string;
  /** Absolute path of the policy file. */
  policyPath: string;
  policy: Policy;
  /** Where the chat plays: the first channel the policy allows, or a channel of its own. */
  channel: string;
}

const blankToUndefined = (value: string | undefined) => (value === '' ? undefined : value);

/** Reads `.env` into `env` (never over what is set), then the model and the policy. */
export async function readChatConfig(env: Record<string, string | undefined>): Promise<ChatConfig> {
  fillFromDotenv(env);
  const parsed = modelEnv.safeParse({
    OPENAI_API_KEY: blankToUndefined(env.OPENAI_API_KEY),
    OPENAI_BASE_URL: blankToUndefined(env.OPENAI_BASE_URL),
    OPENAI_MODEL: blankToUndefined(env.OPENAI_MODEL),
  });
  if (!parsed.success) throw new DemoError(parsed.error.issues.map((i) => i.message).join('\n'));
  const configured = blankToUndefined(env.LOOPGATE_CONFIG) ?? './loopgate.yaml';
  const policyPath = isAbsolute(configured) ? configured : resolve(configured);
  let policy: Policy;
  try {
    policy = await loadPolicy(policyPath, { env });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const hint =
      env.LOOPGATE_CONFIG === undefined
        ? '\n  → set LOOPGATE_CONFIG to your policy file, or copy loopgate.example.yaml to loopgate.yaml and edit it'
        : '';
    throw new DemoError(`${error.message}${hint}`);
  }
  const { OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL } = parsed.data;
  return {
    model: {
      apiKey: OPENAI_API_KEY,
      ...(OPENAI_BASE_URL ? { baseUrl: OPENAI_BASE_URL } : {}),
      ...(OPENAI_MODEL ? { name: OPENAI_MODEL } : {}),
    },
    redisUrl: blankToUndefined(env.REDIS_URL) ?? DEFAULT_REDIS_URL,
    policyPath,
    policy,
    channel: policy.channels.allow[0] ?? 'C0LOCALCHAT',
  };
}

/** Every user id the policy names as an approver (groups cannot be resolved without Slack). */
export function listedApprovers(policy: Policy): Set<string> {
  const ids = [...policy.approvals.approvers];
  for (const settings of Object.values(policy.tools)) {
    ids.push(...((settings as { approvers?: string[] } | undefined)?.approvers ?? []));
  }
  for (const entry of policy.custom) ids.push(...(entry.approvers ?? []));
  return new Set(ids);
}

/** Who may decide approval cards under this policy, for the chat's welcome text. */
export function approverSummary(policy: Policy): string[] {
  const lines = [
    `approvers: ${policy.approvals.approvers.join(', ') || '(none by default)'}` +
      (policy.approvals.selfApproval ? '' : '; whoever asks may not approve their own run'),
  ];
  for (const [tool, settings] of Object.entries(policy.tools)) {
    const own = (settings as { approvers?: string[] } | undefined)?.approvers;
    if (own) lines.push(`approvers of ${tool}: ${own.join(', ')}`);
  }
  for (const entry of policy.custom) {
    if (entry.approvers) lines.push(`approvers of ${entry.name}: ${entry.approvers.join(', ')}`);
  }
  return lines;
}
