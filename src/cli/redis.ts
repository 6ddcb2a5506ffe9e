/**
 * The CLI's Redis connection. Unlike the services' connections (src/queue/connection.ts), which wait
 * through outages, a command-line tool should fail fast: a few connection attempts, one try per command,
 * then a clear error naming the server (without its password).
 */
import { Redis } from 'ioredis';
import { CliError } from './errors.js';

const CONNECT_TIMEOUT_MS = 5_000;
const CONNECT_ATTEMPTS = 3;

/** The URL with any password masked, for messages. */
export function displayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparsable URL)';
  }
}

/** Connects to `url` or throws CliError; the caller quits the connection when done. */
export async function connectRedis(url: string): Promise<Redis> {
  const redis = new Redis(url, {
    connectionName: 'loopgate-cli',
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    retryStrategy: (attempt) => (attempt < CONNECT_ATTEMPTS ? 200 * attempt : null),
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
    const reason =
      (lastError ?? error) instanceof Error ? ((lastError ?? error) as Error).message : String(error);
    throw new CliError(`cannot connect to Redis at ${displayUrl(url)} (${reason}); check REDIS_URL`, {
      cause: error,
    });
  }
}
