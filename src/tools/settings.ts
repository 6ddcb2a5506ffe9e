/**
 * Building blocks of the tools' settings in the policy file. Secrets are never written in the file:
 * keys ending in `Env` hold the NAME of an environment variable, checked to exist when the policy loads
 * and read once when the tools are built.
 */
import { z } from 'zod';
import { ConfigError } from '../config/errors.js';
import type { AllowRule } from './net/guarded-request.js';
import { normalisePrefix } from './net/url-allowlist.js';

export const envVarName = z
  .string({ error: 'expected the name of an environment variable' })
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, {
    error: 'expected the name of an environment variable (letters, digits, _)',
  });

const headerName = z
  .string()
  .regex(/^[A-Za-z0-9-]+$/, { error: 'expected an HTTP header name (letters, digits, -)' });

/** `{ Authorization: DEPLOY_API_AUTH }`: header name to the environment variable holding its value. */
export const headersEnv = z.record(headerName, envVarName, {
  error: 'expected a map of header name to environment variable name',
});

const httpUrlPrefix = z
  .string({ error: 'expected an http(s) URL prefix' })
  .refine((text) => normalisePrefix(text) !== undefined, {
    error: 'expected an http(s) URL prefix (scheme and host, no credentials, query or fragment)',
  })
  .transform((text) => normalisePrefix(text) ?? text);

/** An http(s) URL of a service the operator configured (Prometheus, PagerDuty); may carry a query. */
export const serviceUrl = z
  .string({ error: 'expected an http(s) URL' })
  .refine((text) => URL.canParse(text) && /^https?:$/.test(new URL(text).protocol), {
    error: 'expected an http(s) URL',
  });

const allowObject = z.strictObject({
  prefix: httpUrlPrefix,
  allowPrivate: z.boolean({ error: 'expected true or false' }).default(false),
  headersEnv: headersEnv.default({}),
});

/** A prefix as a plain string, or `{ prefix, allowPrivate?, headersEnv? }`. */
export const allowEntry = z.union([
  httpUrlPrefix.transform((prefix) => ({
    prefix,
    allowPrivate: false,
    headersEnv: {} as Record<string, string>,
  })),
  allowObject,
]);

export type AllowEntrySettings = z.output<typeof allowEntry>;

/**
 * `mode` of a write/notify tool (or of the whole policy in `approvals.mode`): `enforce` runs approved
 * calls; `shadow` never runs them, posts a card marked as such and records what people would decide.
 */
export const toolMode = z.enum(['enforce', 'shadow'], { error: 'expected enforce or shadow' });

/**
 * `retry: { attempts, initialDelayMs, maxDelayMs }` of a read or idempotent tool: how often a transient
 * failure is tried again (attempts in all, the first included) and the bounds of the waits.
 */
export const toolRetry = z
  .strictObject({
    attempts: z
      .number()
      .int()
      .min(1, { error: 'expected at least 1' })
      .max(10, { error: 'expected at most 10' }),
    initialDelayMs: z.number().int().min(0).max(60_000, { error: 'expected at most 60000 ms' }).default(250),
    maxDelayMs: z.number().int().min(0).max(300_000, { error: 'expected at most 300000 ms' }).default(5_000),
  })
  .refine((r) => r.maxDelayMs >= r.initialDelayMs, {
    error: 'maxDelayMs must be at least initialDelayMs',
    path: ['maxDelayMs'],
  });

export const seconds = (max: number) =>
  z
    .number({ error: 'expected a number of seconds' })
    .positive({ error: 'expected a positive number of seconds' })
    .max(max, { error: `expected at most ${max} seconds` });

export const byteCount = z
  .number({ error: 'expected a number of bytes' })
  .int({ error: 'expected a whole number of bytes' })
  .min(1024, { error: 'expected at least 1024 bytes' })
  .max(50_000_000, { error: 'expected at most 50000000 bytes' });

export type Env = Readonly<Record<string, string | undefined>>;

/** Reads an environment variable the policy names; refuses start-up when it vanished since loading. */
export function readSecret(env: Env, name: string, key: string): string {
  const value = env[name];
  if (value === undefined || value === '') {
    throw new ConfigError('tools', [{ key, problem: `environment variable ${name} is not set` }]);
  }
  return value;
}

/** Allowlist entries with their secret header values read from the environment. */
export function resolveAllowRules(
  entries: readonly AllowEntrySettings[],
  env: Env,
  key: string,
): AllowRule[] {
  return entries.map((entry, i) => ({
    prefix: entry.prefix,
    allowPrivate: entry.allowPrivate,
    headers: Object.fromEntries(
      Object.entries(entry.headersEnv).map(([header, name]) => [
        header,
        readSecret(env, name, `${key}[${i}].headersEnv.${header}`),
      ]),
    ),
  }));
}
