/**
 * A short-lived Redis connection for a command-line tool (the CLI, the doctor). Unlike the services'
 * connections (connection.ts), which wait through outages, it fails fast: a few connection attempts, one
 * try per command, then an error naming the server or the cluster's seed nodes (without a password) and
 * the variable to check.
 */
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { describeTarget, type RedisTarget, targetVariable } from '../config/redis-target.js';
import { clusterOptions, type RedisClient } from './connection.js';

const CONNECT_TIMEOUT_MS = 5_000;
const CONNECT_ATTEMPTS = 3;

const retry = (attempt: number) => (attempt < CONNECT_ATTEMPTS ? 200 * attempt : null);

/** Thrown when the target cannot be reached; its message names the variable to check. */
export class RedisUnreachable extends Error {}

/** Connects to `target` or throws RedisUnreachable; the caller quits the connection when done. */
export async function connectFast(target: RedisTarget, connectionName: string): Promise<RedisClient> {
  const options: RedisOptions = {
    connectionName,
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    ...(target.username !== undefined ? { username: target.username } : {}),
    ...(target.password !== undefined ? { password: target.password } : {}),
  };
  const redis: RedisClient =
    target.kind === 'standalone'
      ? new Redis(target.url, { ...options, retryStrategy: retry })
      : new Cluster(target.nodes, {
          ...clusterOptions(target, options),
          lazyConnect: true,
          clusterRetryStrategy: retry,
        });
  let lastError: unknown;
  // Errors surface through connect() and the commands; without a listener ioredis would print
  // "[ioredis] Unhandled error event" with a stack on stderr.
  redis.on('error', (error: unknown) => {
    lastError = error;
  });
  try {
    await redis.connect();
    return redis;
  } catch (error) {
    redis.disconnect();
    const cause = lastError ?? error;
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new RedisUnreachable(
      `cannot connect to ${describeTarget(target)} (${reason}); check ${targetVariable(target)}`,
      { cause: error },
    );
  }
}
