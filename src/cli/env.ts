/**
 * The CLI's environment: only what it uses (Redis and the key prefix, plus the retention the store
 * options follow), validated with the same rules and the same kind of error as src/config/env.ts, so a
 * CLI run does not demand Slack or OpenAI secrets it never touches.
 */
import { config as loadDotenvFile } from 'dotenv';
import { z } from 'zod';
import { ConfigError, type ConfigProblem } from '../config/errors.js';

const digits = (min: number, max: number) =>
  z.string().regex(/^\d+$/).transform(Number).pipe(z.number().int().min(min).max(max));

const VARS = {
  REDIS_URL: {
    schema: z.url({ protocol: /^rediss?$/ }).default('redis://127.0.0.1:6379'),
    expected: 'a redis:// or rediss:// URL, default redis://127.0.0.1:6379',
  },
  LOOPGATE_PREFIX: {
    schema: z
      .string()
      .regex(/^[^{]*\{[^}]+\}/)
      .default('{loopgate}'),
    expected: 'a Redis key prefix containing a non-empty {hash tag} such as {loopgate}',
  },
  RETENTION_DAYS: {
    schema: digits(1, 3650).default(7),
    expected: 'days, an integer from 1 to 3650, default 7',
  },
} as const;

type VarName = keyof typeof VARS;
const NAMES = Object.keys(VARS) as VarName[];

const cliEnvSchema = z.object({
  REDIS_URL: VARS.REDIS_URL.schema,
  LOOPGATE_PREFIX: VARS.LOOPGATE_PREFIX.schema,
  RETENTION_DAYS: VARS.RETENTION_DAYS.schema,
});
export type CliEnv = z.output<typeof cliEnvSchema>;

/**
 * Copies the dotenv file's values into `target` for keys it lacks (the real environment wins), as every
 * loopgate process does at start-up; a missing file is fine. Secrets the policy names resolve the same way.
 */
export function fillFromDotenv(target: Record<string, string | undefined>, path = '.env'): void {
  const result = loadDotenvFile({ path, processEnv: target, override: false, quiet: true });
  if (result.error && result.error.code !== 'ENOENT') {
    throw new ConfigError('environment', [
      { key: path, problem: `cannot read this dotenv file (${result.error.message})` },
    ]);
  }
}

/**
 * Validates the variables the CLI's Redis commands use; empty values count as unset.
 * @throws ConfigError naming each bad variable and what it expects.
 */
export function loadCliEnv(source: Readonly<Record<string, string | undefined>>): CliEnv {
  const input = Object.fromEntries(
    NAMES.map((name) => [name, source[name] === '' ? undefined : source[name]]),
  );
  const parsed = cliEnvSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const bad = new Set(parsed.error.issues.map((issue) => issue.path[0] as VarName));
  const problems: ConfigProblem[] = NAMES.filter((name) => bad.has(name)).map((name) => ({
    key: name,
    problem: `invalid value ${JSON.stringify(shorten(String(input[name])))} (${VARS[name].expected})`,
  }));
  throw new ConfigError('environment', problems);
}

function shorten(value: string): string {
  return value.length > 80 ? `${value.slice(0, 77)}...` : value;
}
