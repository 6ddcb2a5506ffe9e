/**
 * Redis outages as a person can act on them. Every connection of a process fails at once when Redis is
 * down, each with its own error on each retry (BullMQ's queue and worker repeat them): left to itself
 * that is several raw warnings a second, with stacks, naming no variable. Here one connection speaks
 * for all: one JSON log line per back-off step naming the target and the variable to check, and one
 * when Redis answers again. The other connections' errors are kept at debug level. Every connection
 * gets an 'error' listener, without which ioredis prints "[ioredis] Unhandled error event" and a stack
 * on stderr.
 */
import type { Logger } from 'pino';
import { describeTarget, type RedisTarget, targetVariable } from '../config/redis-target.js';
import type { RedisClient } from './connection.js';

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);

/** An error that only says Redis cannot be reached right now (the outage line covers it). */
export function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== undefined && CONNECTION_CODES.has(code)) return true;
  return /Connection is closed|connect ETIMEDOUT|Stream isn't writeable|ClusterAllFailedError|Failed to refresh slots cache/i.test(
    err.message,
  );
}

const reasonOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * Reports outages of `connections[0]` (the process's first connection) for the whole process and gives
 * every connection an error listener. Returns nothing: the listeners live as long as the connections.
 */
export function reportRedisOutages(
  connections: readonly RedisClient[],
  target: RedisTarget,
  logger: Logger,
): void {
  const where = describeTarget(target);
  const variable = targetVariable(target);
  let lastError: unknown;
  let attempt = 0;
  for (const [i, connection] of connections.entries()) {
    connection.on('error', (err: unknown) => {
      if (i === 0) lastError = err;
      if (!isConnectionError(err)) logger.warn({ err, connection: i }, 'redis connection error');
      else logger.debug({ reason: reasonOf(err), connection: i }, 'redis connection error');
    });
  }
  const lead = connections[0];
  if (!lead) return;
  lead.on('reconnecting', (delay: unknown) => {
    attempt += 1;
    const retryInMs = typeof delay === 'number' ? delay : undefined;
    const reason = lastError === undefined ? 'connection lost' : reasonOf(lastError);
    logger.error(
      { redis: where, variable, reason, attempt, ...(retryInMs !== undefined ? { retryInMs } : {}) },
      `Redis unreachable: ${where} (${reason}); check ${variable}${retryInMs !== undefined ? `; retrying in ${retryInMs} ms` : ''}`,
    );
  });
  lead.on('ready', () => {
    if (attempt === 0) return;
    logger.info({ redis: where, attempts: attempt }, `Redis reachable again: ${where}`);
    attempt = 0;
    lastError = undefined;
  });
}
