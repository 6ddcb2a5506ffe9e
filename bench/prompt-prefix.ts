/**
 * Tokens of the request prefix every step of a run sends before the conversation: the system prompt and
 * the tool list (as the Chat Completions `tools` JSON), counted with gpt-tokenizer (o200k_base, GPT-4o's
 * and GPT-4.1's encoding; a local model's tokenizer differs by some percent). The policy is the eval
 * suite's (all built-in tools enabled) unless `--policy <file>` names another. Prints figures only.
 *
 *   npx tsx bench/prompt-prefix.ts [--policy eval/suites/oncall/policy.yaml] [--channel C0ONCALL]
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { countTokens } from 'gpt-tokenizer';
import { parse as parseYaml } from 'yaml';
import { parsePolicy } from '../src/config/policy.js';
import { secretNames } from '../src/config/policy-env.js';
import { fillPlaceholders } from '../src/eval/merge.js';
import { toolSchemas } from '../src/loop/tool-schemas.js';
import { buildTools } from '../src/tools/registry.js';
import { buildSystemPrompt } from '../src/tools/system-prompt.js';

const { values } = parseArgs({
  options: {
    policy: { type: 'string', default: 'eval/suites/oncall/policy.yaml' },
    channel: { type: 'string', default: 'C0ONCALL' },
  },
});
const path = resolve(values.policy);
const raw = fillPlaceholders(parseYaml(await readFile(path, 'utf8')) ?? {}, {
  WORLD: 'http://127.0.0.1:9',
  RUNBOOKS: resolve(dirname(path), 'runbooks'),
});
// Secrets the policy names get stand-in values: only their presence is checked.
const env = Object.fromEntries(secretNames(raw).map((name) => [name, 'stand-in']));
const policy = parsePolicy(JSON.stringify(raw), { env, baseDir: dirname(path), source: path });
const slack = { postMessage: async () => ({ ts: '1.0' }) };
const tools = await buildTools(policy, { env, slack } as never);

const tokens = (text: string) => countTokens(text, { disallowedSpecial: new Set() });
const wire = toolSchemas(tools).map((t) => ({
  type: 'function',
  function: { name: t.name, description: t.description, parameters: t.parameters },
}));
// Not a literal: the same script measured the code before the time left the system prompt (`now`).
const promptInput = {
  channelPrompt: policy.channels.prompt[values.channel],
  toolNames: [...tools.keys()],
  now: new Date('2026-01-01T00:00:00Z'),
};
const system = buildSystemPrompt(promptInput);
const operator = policy.channels.prompt[values.channel]?.trim() ?? '';

const rows: [string, number][] = [
  ['system prompt', tokens(system)],
  ['  of which the channel prompt (operator text)', operator ? tokens(operator) : 0],
  [`tools (${wire.length}, JSON as sent)`, tokens(JSON.stringify(wire))],
  ...wire.map((w) => [`  ${w.function.name}`, tokens(JSON.stringify(w))] as [string, number]),
];
const total = tokens(system) + tokens(JSON.stringify(wire));
console.log(`prompt prefix of ${values.policy} (channel ${values.channel}), o200k_base tokens`);
for (const [label, n] of rows) console.log(`${label.padEnd(48)} ${String(n).padStart(6)}`);
console.log(`${'total prefix (system prompt + tools)'.padEnd(48)} ${String(total).padStart(6)}`);
