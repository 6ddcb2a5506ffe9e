/**
 * Redis as loopgate needs it: reachable, `maxmemory-policy noeviction` (an evicted key is a lost run or
 * approval), the append-only file on (a restart keeps paused runs), and a version BullMQ supports.
 * Read from INFO, which managed Redis services allow where CONFIG GET is often disabled.
 */
import { describeTarget, type RedisTarget, targetVariable } from '../config/redis-target.js';
import { connectFast } from '../queue/connect-fast.js';
import type { RedisClient } from '../queue/connection.js';
import { type CheckResult, fail, ok, warn } from './types.js';

/** BullMQ 6 needs Redis 6.2 or later. */
const MIN_VERSION = [6, 2] as const;

function field(info: string, key: string): string | undefined {
  return new RegExp(`^${key}:(.*)$`, 'm').exec(info)?.[1]?.trim();
}

export async function redisChecks(target: RedisTarget): Promise<CheckResult[]> {
  let redis: RedisClient;
  try {
    // A few quick attempts, then the error: the doctor reports, it does not wait out an outage.
    redis = await connectFast(target, 'loopgate-doctor');
  } catch (error) {
    return [fail('redis', error instanceof Error ? error.message : String(error))];
  }
  try {
    const info = await redis.info();
    const version = field(info, 'redis_version') ?? '';
    const [major = 0, minor = 0] = version.split('.').map(Number);
    const results: CheckResult[] = [];
    const where = describeTarget(target);
    results.push(
      major > MIN_VERSION[0] || (major === MIN_VERSION[0] && minor >= MIN_VERSION[1])
        ? ok('redis', `${where} answers, version ${version}`)
        : fail('redis', `${where} is version ${version}; loopgate needs ${MIN_VERSION.join('.')} or later`),
    );
    const policy = field(info, 'maxmemory_policy');
    results.push(
      policy === 'noeviction'
        ? ok('redis maxmemory-policy', 'noeviction: Redis refuses writes when full instead of dropping runs')
        : fail(
            'redis maxmemory-policy',
            `${policy ?? 'unknown'}: Redis may evict runs, approvals and jobs when full; set maxmemory-policy noeviction`,
          ),
    );
    results.push(
      field(info, 'aof_enabled') === '1'
        ? ok('redis persistence', 'append-only file on')
        : warn(
            'redis persistence',
            `append-only file off: a Redis restart can lose paused runs and approvals; set appendonly yes (appendfsync everysec) in production (${targetVariable(target)})`,
          ),
    );
    return results;
  } finally {
    redis.disconnect();
  }
}
