/**
 * What `npm run chat` takes from its environment (the real one, then `.env`, as every loopgate process
 * reads it): the configured model, which must have a key, and the configured policy file, validated up
 * front so a problem is named before any process starts.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { type ApproverEntry, entryIds } from '../../src/approvers/approvers.js';
import { fillFromDotenv } from '../../src/config/env.js';
import { ConfigError } from '../../src/config/errors.js';
import { loadPolicy, type Policy } from '../../src/config/policy.js';
import { DemoError } from '../lib/errors.js';
import { DEFAULT_REDIS_URL } from '../lib/redis.js';
import type { ModelSettings } from '../lib/stage.js';

/** Said when no key is set: the chat then plays the demo's scripted model and policy. */
export const SCRIPTED_HINT = `No OPENAI_API_KEY (in the environment or .env): playing the demo's scripted on-call model with the demo's policy.
  Ask it about a slow service, e.g. "@loopgate payments is slow, what's going on?"
  Your model instead:                   OPENAI_API_KEY=sk-… npm run chat
  a local OpenAI-compatible server:     OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_API_KEY=local OPENAI_MODEL=<model> npm run chat
  (Ollama, vLLM, llama.cpp and LM Studio serve that API; the key is any non-empty text when the server wants none)`;

const modelEnv = z.object({
  OPENAI_API_KEY: z.string().min(1).optional(),
  OPENAI_BASE_URL: z
    .url({
      protocol: /^https?$/,
      error: 'OPENAI_BASE_URL: expected an http(s) URL, e.g. http://127.0.0.1:8000/v1',
    })
    .optional(),
  OPENAI_MODEL: z.string().min(1).optional(),
});

/** No key: the demo's scripted model and policy play (chat.ts starts them). */
export interface ScriptedChat {
  scripted: true;
  redisUrl: string;
}

export interface ChatConfig {
  scripted: false;
  model: ModelSettings;
  redisUrl: string;
  /** Absolute path of the policy file. */
  policyPath: string;
  policy: Policy;
  /** Where the chat plays: the first channel the policy allows, or a channel of its own. */
  channel: string;
}

const blankToUndefined = (value: string | undefined) => (value === '' ? undefined : value);

/**
 * Reads `.env` into `env` (never over what is set), then the model and the policy; with no key, says
 * the demo's scripted model plays.
 */
export async function readChatConfig(
  env: Record<string, string | undefined>,
): Promise<ChatConfig | ScriptedChat> {
  fillFromDotenv(env);
  const parsed = modelEnv.safeParse({
    OPENAI_API_KEY: blankToUndefined(env.OPENAI_API_KEY),
    OPENAI_BASE_URL: blankToUndefined(env.OPENAI_BASE_URL),
    OPENAI_MODEL: blankToUndefined(env.OPENAI_MODEL),
  });
  if (!parsed.success) throw new DemoError(parsed.error.issues.map((i) => i.message).join('\n'));
  const { OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL } = parsed.data;
  const redisUrl = blankToUndefined(env.REDIS_URL) ?? DEFAULT_REDIS_URL;
  // No key: the demo's scripted model, which plays only the demo's policy (chat.ts writes it).
  if (OPENAI_API_KEY === undefined) return { scripted: true, redisUrl };
  const configured = blankToUndefined(env.LOOPGATE_CONFIG) ?? './loopgate.yaml';
  let policyPath = isAbsolute(configured) ? configured : resolve(configured);
  let policy: Policy;
  try {
    policy = await loadPolicy(policyPath, { env });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const hint =
      blankToUndefined(env.LOOPGATE_CONFIG) === undefined
        ? `\n  → set LOOPGATE_CONFIG to your policy file, or write one with \`npx loopgate init\`${existsSync('loopgate.yaml') ? '' : ' (or copy loopgate.example.yaml to loopgate.yaml)'}`
        : '';
    throw new DemoError(`${error.message}${hint}`);
  }
  // OPENAI_MODEL names the model the person's server serves: it wins over the policy's model.name,
  // which the workers would send otherwise (a local server does not serve gpt-4.1-mini).
  if (OPENAI_MODEL && policy.model.name !== undefined && policy.model.name !== OPENAI_MODEL) {
    policyPath = writeModelOverride(policyPath, OPENAI_MODEL);
    policy = await loadPolicy(policyPath, { env });
  }
  return {
    scripted: false,
    model: {
      apiKey: OPENAI_API_KEY,
      ...(OPENAI_BASE_URL ? { baseUrl: OPENAI_BASE_URL } : {}),
      ...(OPENAI_MODEL ? { name: OPENAI_MODEL } : {}),
    },
    redisUrl,
    policyPath,
    policy,
    channel: policy.channels.allow[0] ?? 'C0LOCALCHAT',
  };
}

/** Chat-only copies of policies, removed when the chat ends. */
export const overrideFiles: string[] = [];

/**
 * A copy of the policy beside it (so its relative paths still resolve) with model.name set to `model`.
 */
function writeModelOverride(policyPath: string, model: string): string {
  const doc = parseDocument(readFileSync(policyPath, 'utf8'));
  doc.setIn(['model', 'name'], model);
  const copy = join(
    dirname(policyPath),
    `.${basename(policyPath)}.chat-${randomBytes(4).toString('hex')}.yaml`,
  );
  writeFileSync(copy, doc.toString());
  overrideFiles.push(copy);
  return copy;
}

/** Every user id the policy names as an approver (groups cannot be resolved without Slack). */
export function listedApprovers(policy: Policy): Set<string> {
  const ids = entryIds(policy.approvals.approvers);
  for (const settings of Object.values(policy.tools)) {
    ids.push(...entryIds((settings as { approvers?: ApproverEntry[] } | undefined)?.approvers ?? []));
  }
  for (const entry of policy.custom) ids.push(...entryIds(entry.approvers ?? []));
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
