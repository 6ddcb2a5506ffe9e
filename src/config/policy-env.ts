/**
 * Secrets named by the policy must exist when it loads. By convention every key ending in `Env` holds the
 * name of an environment variable (`routingKeyEnv: PD_ROUTING_KEY`) or a map of names
 * (`headersEnv: { Authorization: DEPLOY_AUTH }`); this walk finds them all and reports the unset ones.
 * Only names are reported, never values.
 */
import { SECRET_VAR_NAMES } from './env.js';
import type { ConfigProblem } from './errors.js';
import { keyPath } from './policy-problems.js';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

type Env = Readonly<Record<string, string | undefined>>;

/** One variable a `…Env` key names, and where. */
interface SecretRef {
  name: string;
  path: PropertyKey[];
}

function walk(node: unknown, path: PropertyKey[], out: SecretRef[]): void {
  if (Array.isArray(node)) {
    node.forEach((item, i) => {
      walk(item, [...path, i], out);
    });
    return;
  }
  if (node === null || typeof node !== 'object') return;
  for (const [key, value] of Object.entries(node)) {
    const here = [...path, key];
    if (!key.endsWith('Env')) walk(value, here, out);
    else if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [inner, name] of Object.entries(value)) refer(name, [...here, inner], out);
    } else refer(value, here, out);
  }
}

function refer(name: unknown, path: PropertyKey[], out: SecretRef[]): void {
  // The schema reports malformed names.
  if (typeof name === 'string' && NAME.test(name)) out.push({ name, path });
}

function secretRefs(policy: unknown): SecretRef[] {
  const out: SecretRef[] = [];
  walk(policy, [], out);
  return out;
}

/** Problems for every `…Env` key whose environment variable is unset or empty. */
export function missingSecrets(raw: unknown, env: Env): ConfigProblem[] {
  return secretRefs(raw)
    .filter(({ name }) => env[name] === undefined || env[name] === '')
    .map(({ name, path }) => ({ key: keyPath(path), problem: `environment variable ${name} is not set` }));
}

/** The names of every environment variable the policy (raw or parsed) reads a secret from. */
export function secretNames(policy: unknown): string[] {
  return [...new Set(secretRefs(policy).map((ref) => ref.name))];
}

/**
 * The values of every secret this process was configured with: loopgate's own (Slack and OpenAI keys)
 * and each variable a `…Env` key of the policy names (header secrets, routing keys, command variables).
 */
export function configuredSecrets(policy: unknown, env: Env): string[] {
  return [...SECRET_VAR_NAMES, ...secretNames(policy)].flatMap((name) => env[name] ?? []);
}
