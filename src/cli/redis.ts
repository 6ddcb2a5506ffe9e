/**
 * The CLI's Redis connection. Unlike the services' connections (src/queue/connection.ts), which wait
 * through outages, a command-line tool should fail fast: a few connection attempts, one try per command,
 * then a clear error naming the server or the cluster's seed nodes (without a password) and the
 * variable to check.
 */
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { describeTarget, type RedisTarget, targetVariable } from '../config/redis-target.js';
import { clusterOptions, type RedisClient } from '../queue/connection.js';
import { CliError } from './errors.js';

const CONNECT_TIMEOUT_MS = 5_000;
const CONNECT_ATTEMPTS = 3;

const retry = (attempt: number) => (attempt < CONNECT_ATTEMPTS ? 200 * attempt : null);

/** Connects to `target` (a URL: one server) or throws CliError; the caller quits the connection when done. */
export async function connectRedis(target: string | RedisTarget): Promise<RedisClient> {
  const resolved: RedisTarget = typeof target === 'string' ? { kind: 'standalone', url: target } : target;
  const options: RedisOptions = {
    connectionName: 'loopgate-cli',
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    ...(resolved.username !== undefined ? { username: resolved.username } : {}),
    ...(resolved.password !== undefined ? { password: resolved.password } : {}),
  };
  const redis: RedisClient =
    resolved.kind === 'standalone'
      ? new Redis(resolved.url, { ...options, retryStrategy: retry })
      : new Cluster(resolved.nodes, {
          ...clusterOptions(resolved, options),
          lazyConnect: true,
          clusterRetryStrategy: retry,
        });
  let lastError: unknown;
  // Errors surface through connect() and the commands; this listener only keeps them from being unhandled.
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
    throw new CliError(
      `cannot connect to ${describeTarget(resolved)} (${reason}); check ${targetVariable(resolved)}`,
      { cause: error },
    );
  }
}
