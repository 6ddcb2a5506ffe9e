import { LoopgateError } from '../loop/errors.js';

/** Exit statuses of the CLI: scripts rely on them. */
export const EXIT = { ok: 0, error: 1, usage: 2 } as const;

/** The command line is wrong (unknown option, missing argument): exit 2, with the command's usage. */
export class UsageError extends LoopgateError {
  constructor(
    message: string,
    /** The usage text of the command concerned, printed after the message. */
    readonly usage: string,
  ) {
    super('usage', message);
  }
}

/** The command could not do its job (Redis unreachable, run not found): exit 1 with this message. */
export class CliError extends LoopgateError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('cli_error', message, options);
  }
}
