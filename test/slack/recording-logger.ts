import type { Logger } from '../../src/loop/tool-contract.js';

export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  obj: Record<string, unknown>;
  msg?: string;
}

/** A Logger that keeps its entries in memory for assertions. */
export function recordingLogger(
  entries: LogEntry[] = [],
  bindings: Record<string, unknown> = {},
): Logger & {
  entries: LogEntry[];
} {
  const log = (level: LogEntry['level']) => (obj: object, msg?: string) => {
    entries.push({ level, obj: { ...bindings, ...obj }, ...(msg === undefined ? {} : { msg }) });
  };
  return {
    entries,
    debug: log('debug'),
    info: log('info'),
    warn: log('warn'),
    error: log('error'),
    child: (more) => recordingLogger(entries, { ...bindings, ...more }),
  };
}
