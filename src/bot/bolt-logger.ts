/**
 * Bolt (and its WebClient) log through a variadic console-style logger; this adapter writes their lines
 * into loopgate's pino logger as structured entries (`component: bolt`, an Error as `err`). Lines below
 * the level are dropped before any formatting: Bolt logs at debug on every request.
 */
import { type Logger as BoltLogger, LogLevel } from '@slack/bolt';
import type { Logger } from '../log/logger.js';

const ORDER: readonly LogLevel[] = [LogLevel.DEBUG, LogLevel.INFO, LogLevel.WARN, LogLevel.ERROR];

/** Bolt's level matching a pino level (pino's trace is Bolt's debug, fatal and silent are error). */
export function boltLevelOf(pinoLevel: string): LogLevel {
  switch (pinoLevel) {
    case 'trace':
    case 'debug':
      return LogLevel.DEBUG;
    case 'info':
      return LogLevel.INFO;
    case 'warn':
      return LogLevel.WARN;
    default:
      return LogLevel.ERROR;
  }
}

function entry(parts: unknown[]): { fields: Record<string, unknown>; message: string } {
  const error = parts.find((p): p is Error => p instanceof Error);
  const message = parts
    .filter((p) => p !== error)
    .map((p) => (typeof p === 'string' ? p : JSON.stringify(p)))
    .join(' ');
  return {
    fields: error ? { component: 'bolt', err: error } : { component: 'bolt' },
    message: message || error?.message || '',
  };
}

export function boltLogger(logger: Logger): BoltLogger {
  let level = boltLevelOf(logger.level);
  const enabled = (at: LogLevel) => ORDER.indexOf(at) >= ORDER.indexOf(level);
  const write = (at: LogLevel, parts: unknown[]) => {
    if (!enabled(at)) return;
    const { fields, message } = entry(parts);
    logger[at](fields, message);
  };
  return {
    debug: (...parts: unknown[]) => write(LogLevel.DEBUG, parts),
    info: (...parts: unknown[]) => write(LogLevel.INFO, parts),
    warn: (...parts: unknown[]) => write(LogLevel.WARN, parts),
    error: (...parts: unknown[]) => write(LogLevel.ERROR, parts),
    setLevel: (next) => {
      level = next;
    },
    getLevel: () => level,
    setName: () => {},
  };
}
