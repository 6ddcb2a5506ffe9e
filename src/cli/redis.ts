/** The CLI's Redis connection: fails fast (src/queue/connect-fast.ts), as a CliError naming the variable. */
import type { RedisTarget } from '../config/redis-target.js';
import { connectFast, RedisUnreachable } from '../queue/connect-fast.js';
import type { RedisClient } from '../queue/connection.js';
import { CliError } from './errors.js';

/** Connects to `target` (a URL: one server) or throws CliError; the caller quits the connection when done. */
export async function connectRedis(target: string | RedisTarget): Promise<RedisClient> {
  const resolved: RedisTarget = typeof target === 'string' ? { kind: 'standalone', url: target } : target;
  try {
    return await connectFast(resolved, 'loopgate-cli');
  } catch (error) {
    if (error instanceof RedisUnreachable) throw new CliError(error.message, { cause: error.cause });
    throw error;
  }
}
