/**
 * Secrets named by the policy must exist when it loads. By convention every key ending in `Env` holds the
 * name of an environment variable (`routingKeyEnv: PD_ROUTING_KEY`) or a map of names
 * (`headersEnv: { Authorization: DEPLOY_AUTH }`); this walk finds them all and reports the unset ones.
 * Only names are reported, never values.
 */
import type { ConfigProblem } from './errors.js';
import { keyPath } from './policy-problems.js';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

type Env = Readonly<Record<string, string | undefined>>;

function check(name: unknown, path: PropertyKey[], env: Env, out: ConfigProblem[]): void {
  if (typeof name !== 'string' || !NAME.test(name)) return; // the schema reports malformed names
  const value = env[name];
  if (value === undefined || value === '') {
    out.push({ key: keyPath(path), problem: `environment variable ${name} is not set` });
  }
}

function walk(node: unknown, path: PropertyKey[], env: Env, out: ConfigProblem[]): void {
  if (Array.isArray(node)) {
    node.forEach((item, i) => {
      walk(item, [...path, i], env, out);
    });
    return;
  }
  if (node === null || typeof node !== 'object') return;
  for (const [key, value] of Object.entries(node)) {
    const here = [...path, key];
    if (!key.endsWith('Env')) walk(value, here, env, out);
    else if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [inner, name] of Object.entries(value)) check(name, [...here, inner], env, out);
    } else check(value, here, env, out);
  }
}

/** Problems for every `…Env` key whose environment variable is unset or empty. */
export function missingSecrets(raw: unknown, env: Env): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  walk(raw, [], env, out);
  return out;
}
