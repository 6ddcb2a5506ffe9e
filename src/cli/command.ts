import type { Writable } from 'node:stream';
import type { Store } from '../store/index.js';

/** What a command gets from the CLI around it. */
export interface CliContext {
  stdout: Writable;
  stderr: Writable;
  /** The process environment, with the values of `.env` filled in. */
  env: Readonly<Record<string, string | undefined>>;
  now(): number;
  /** The run store on REDIS_URL under LOOPGATE_PREFIX: connected on first use, closed after the command. */
  store(): Promise<Store>;
}

/** One `loopgate <name>` command. */
export interface Command {
  name: string;
  /** The `--help` text, its first line the usage. */
  help: string;
  /** Resolves with the exit status; throws UsageError (exit 2) or anything else (exit 1). */
  run(argv: readonly string[], ctx: CliContext): Promise<number>;
}

/**
 * A command as `loopgate --help` lists it. Its module is imported only when the command runs: the store
 * and the policy code each take a noticeable share of a short CLI run to load, and no command needs both.
 */
export interface CommandEntry {
  name: string;
  /** One line for `loopgate --help`. */
  summary: string;
  load(): Promise<Command>;
}
