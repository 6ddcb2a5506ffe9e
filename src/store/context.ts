import { type KeyScheme, keyScheme } from './keys.js';
import { defineScripts, type RedisClient, type RunScript } from './scripts.js';

const DAY_MS = 86_400_000;

/** Options of the run store; every field has a default. */
export interface StoreOptions {
  /**
   * Key prefix. The BullMQ prefix may be passed as is: braces are stripped for run keys, which carry
   * their run's own hash tag (see keys.ts). Default `{loopgate}`.
   */
  prefix?: string;
  /** How long a finished run's keys (state, trace, approvals, ledger) are kept. Default 7 days. */
  retentionMs?: number;
  /**
   * TTL given to a new run's keys, so a run that never finishes (a crashed deployment, a lost job)
   * cannot stay in Redis forever; finishing replaces it with `retentionMs`. Default 30 days; 0: none.
   */
  maxRunLifetimeMs?: number;
  /** Trace entries kept per run (older ones are trimmed). Default 500. */
  traceMaxLength?: number;
  /** Approximate number of entries kept in the audit stream (XADD MAXLEN ~). Default 100,000. */
  auditMaxLength?: number;
  /** Runs kept in each per-channel and per-user index. Default 200. */
  indexMaxRuns?: number;
  /** Start jobs a thread's inbox holds behind its working run (policy `inbound.maxQueuedPerThread`). Default 10. */
  maxQueuedPerThread?: number;
  /**
   * Replicas that must confirm (Redis WAIT) the `executing` record of an approved call before it runs,
   * and a person's decision before it counts. Default 0: no WAIT (see docs/operations.md, Durability and failover).
   */
  waitReplicas?: number;
  /** How long that WAIT may block, in ms (> 0; WAIT 0 would block forever). Default 500. */
  waitTimeoutMs?: number;
}

export const DEFAULT_STORE_OPTIONS: Required<StoreOptions> = {
  prefix: '{loopgate}',
  retentionMs: 7 * DAY_MS,
  maxRunLifetimeMs: 30 * DAY_MS,
  traceMaxLength: 500,
  auditMaxLength: 100_000,
  indexMaxRuns: 200,
  maxQueuedPerThread: 10,
  waitReplicas: 0,
  waitTimeoutMs: 500,
};

/** What every part of the store shares: the connection, its scripts, the key scheme, the options. */
export interface StoreContext {
  redis: RedisClient;
  script: RunScript;
  keys: KeyScheme;
  options: Required<StoreOptions>;
}

export function createStoreContext(redis: RedisClient, options: StoreOptions = {}): StoreContext {
  const merged = { ...DEFAULT_STORE_OPTIONS, ...options };
  for (const name of [
    'retentionMs',
    'maxRunLifetimeMs',
    'traceMaxLength',
    'auditMaxLength',
    'indexMaxRuns',
    'maxQueuedPerThread',
    'waitReplicas',
    'waitTimeoutMs',
  ] as const) {
    const value = merged[name];
    if (!Number.isSafeInteger(value) || value < 0)
      throw new RangeError(`store option ${name} must be an integer >= 0`);
  }
  if (merged.retentionMs === 0 || merged.traceMaxLength === 0 || merged.waitTimeoutMs === 0) {
    throw new RangeError('store options retentionMs, traceMaxLength and waitTimeoutMs must be > 0');
  }
  return { redis, script: defineScripts(redis), keys: keyScheme(merged.prefix), options: merged };
}
