/**
 * pino loggers for every loopgate process: one JSON line per event, with tokens, API keys, signing
 * secrets, authorization headers and cookies censored at any depth (bare fields, env objects, HTTP
 * headers, SDK errors carrying their request config, child bindings).
 */
import { hostname } from 'node:os';
import { type DestinationStream, type LevelWithSilent, type Logger, pino, stdTimeFunctions } from 'pino';
import { redactJsonLine, type SecretRedactor } from './redact.js';

export type { Logger } from 'pino';
export { REDACTED, type SecretRedactor, secretRedactor } from './redact.js';

interface CreateLoggerOptions {
  /** Minimum level written; `silent` writes nothing. */
  level: LevelWithSilent;
  /** Where lines go; default stdout (written synchronously, so nothing is lost on exit). */
  destination?: DestinationStream;
  /** The `service` field of every line, e.g. `loopgate-worker`; default `loopgate`. */
  service?: string;
  /** Also replaces these secret values wherever they appear in a line, under any key or in any message. */
  secrets?: SecretRedactor;
}

/** A root logger. Lines carry `service`, `pid`, `hostname`, an ISO `time` and the level as a word. */
export function createLogger(options: CreateLoggerOptions): Logger {
  return pino(
    {
      level: options.level,
      base: { service: options.service ?? 'loopgate', pid: process.pid, hostname: hostname() },
      timestamp: stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // Secrets are censored in the finished line; see redact.ts for why not pino's `redact` paths.
      hooks: { streamWrite: secretsRedacted(options.secrets) },
    },
    options.destination,
  );
}

function secretsRedacted(secrets: SecretRedactor | undefined): (line: string) => string {
  if (!secrets) return redactJsonLine;
  return (line) => secrets.jsonLine(redactJsonLine(line));
}

interface RunBindings {
  runId: string;
  /** The BullMQ job advancing the run, when there is one. */
  jobId?: string;
}

/** A child logger whose every line names the run (and job), so one run's story can be grepped. */
export function runLogger(logger: Logger, bindings: RunBindings): Logger {
  const { runId, jobId } = bindings;
  return logger.child(jobId === undefined ? { runId } : { runId, jobId });
}
