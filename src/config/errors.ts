import { LoopgateError } from '../loop/errors.js';

/** One thing wrong with a configuration value: which key, and what is wrong with it. */
export interface ConfigProblem {
  /** The key as the operator writes it: an environment variable name or a path in the YAML file. */
  key: string;
  /** What is wrong and what is expected, e.g. `required (a bot token starting with xoxb-)`. */
  problem: string;
}

/**
 * The configuration cannot be used. The message lists every problem found, one per line, so an operator
 * fixes them all in one go instead of one restart per key. Values of secrets never appear in it.
 */
export class ConfigError extends LoopgateError {
  constructor(
    /** Where the configuration came from, e.g. `environment` or the path of the YAML file. */
    readonly source: string,
    readonly problems: readonly ConfigProblem[],
  ) {
    super('config_error', formatProblems(source, problems));
  }
}

function formatProblems(source: string, problems: readonly ConfigProblem[]): string {
  const lines = problems.map((p) => `  ${p.key}: ${p.problem}`);
  return [`invalid configuration in ${source}:`, ...lines].join('\n');
}

/** Where `exitOnConfigError` reports and how it stops; replaced in tests. */
export interface ExitIo {
  writeStderr(text: string): void;
  exit(code: number): never;
}

const processIo: ExitIo = {
  writeStderr: (text) => process.stderr.write(text),
  exit: (code) => process.exit(code),
};

/**
 * Runs a process's start-up and, when it fails with a `ConfigError`, prints the message (which names each
 * offending key) to stderr and exits 1: an operator sees what to fix instead of a stack trace. Any other
 * error is rethrown untouched.
 */
export async function exitOnConfigError<T>(start: () => T | Promise<T>, io: ExitIo = processIo): Promise<T> {
  try {
    return await start();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    io.writeStderr(`loopgate: ${error.message}\n`);
    return io.exit(1);
  }
}
