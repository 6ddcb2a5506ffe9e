/**
 * The CLI's environment: only what it uses (Redis and the key prefix, plus the retention the store
 * options follow), with the rules and errors of src/config/env.ts, so a CLI run does not demand Slack or
 * OpenAI secrets it never touches.
 */
import { loadEnvVars } from '../config/env.js';

const CLI_VARS = [
  'REDIS_URL',
  'REDIS_CLUSTER_NODES',
  'REDIS_TLS',
  'REDIS_USERNAME',
  'REDIS_PASSWORD',
  'LOOPGATE_PREFIX',
  'RETENTION_DAYS',
] as const;

/**
 * Validates the variables the CLI's Redis commands use; empty values count as unset.
 * @throws ConfigError naming each bad variable and what it expects.
 */
export function loadCliEnv(source: Readonly<Record<string, string | undefined>>) {
  return loadEnvVars(source, CLI_VARS);
}
