/** Command-line parsing shared by the commands: node:util parseArgs, with usage errors and `--help`. */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { UsageError } from './errors.js';

type Options = NonNullable<ParseArgsConfig['options']>;

const HELP = { help: { type: 'boolean', short: 'h' } } as const;

type Parsed<O extends Options> = ReturnType<
  typeof parseArgs<{ options: O & typeof HELP; allowPositionals: true; strict: true }>
>;

interface ParsedCommandLine<O extends Options> {
  values: Parsed<O>['values'];
  positionals: string[];
}

/**
 * Parses `argv` against `options` (plus `--help`/`-h`); returns null when help was asked for. Unknown
 * options, missing option values and a wrong number of positionals are UsageErrors carrying `help`.
 */
export function parseCommandLine<O extends Options>(
  argv: readonly string[],
  options: O,
  help: string,
  positionals: { min: number; max: number } = { min: 0, max: 0 },
): ParsedCommandLine<O> | null {
  let parsed: Parsed<O>;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: { ...options, ...HELP },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error), help);
  }
  // Inside this generic function TypeScript cannot see `help` among the values; it is always declared.
  if ((parsed.values as Record<string, unknown>).help === true) return null;
  const count = parsed.positionals.length;
  if (count < positionals.min) throw new UsageError('missing argument', help);
  if (count > positionals.max) {
    throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[positionals.max])}`, help);
  }
  return { values: parsed.values, positionals: parsed.positionals };
}

/** A `--limit`-style option: a whole number from 1 to `max`, or `fallback` when absent. */
export function positiveInt(
  value: string | undefined,
  name: string,
  max: number,
  fallback: number,
  help: string,
) {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max) {
    throw new UsageError(
      `--${name} expects a whole number from 1 to ${max}, not ${JSON.stringify(value)}`,
      help,
    );
  }
  return Number(value);
}
