/**
 * Runs an operator-declared command with `execFile`: an argument vector, never a shell, so a parameter
 * value is always exactly one argument (or part of one) whatever characters it holds. The command gets
 * only the environment it is given, never the worker's.
 */
import { execFile } from 'node:child_process';
import { ToolError } from '../errors.js';

interface CommandOutput {
  exitCode: 0;
  stdout: string;
  stderr: string;
}

const MAX_BUFFER = 1_000_000;

function tail(text: string, max: number): string {
  return text.length <= max ? text : `…${text.slice(text.length - max)}`;
}

interface CommandOptions {
  timeoutMs: number;
  signal: AbortSignal;
  /** The command's whole environment. */
  env: Readonly<Record<string, string>>;
}

export function runCommand(
  argv: readonly string[],
  { timeoutMs, signal, env }: CommandOptions,
): Promise<CommandOutput> {
  const [program, ...args] = argv;
  if (program === undefined) return Promise.reject(new ToolError('command_failed', 'empty command'));
  return new Promise((resolve, reject) => {
    execFile(
      program,
      args,
      {
        timeout: timeoutMs,
        maxBuffer: MAX_BUFFER,
        signal,
        env,
        shell: false,
        windowsHide: true,
        encoding: 'utf8',
      },
      (error, stdout, stderr) => {
        if (!error) {
          resolve({ exitCode: 0, stdout: tail(stdout, 4000), stderr: tail(stderr, 2000) });
          return;
        }
        if (signal.aborted) {
          reject(signal.reason);
          return;
        }
        const detail = tail(stderr || stdout, 800).trim();
        if (error.killed && error.signal) {
          reject(
            new ToolError(
              'command_timeout',
              `${program} did not finish within ${timeoutMs} ms and was stopped`,
            ),
          );
        } else if (typeof error.code === 'number') {
          reject(
            new ToolError(
              'command_failed',
              `${program} exited with code ${error.code}${detail ? `: ${detail}` : ''}`,
            ),
          );
        } else {
          reject(new ToolError('command_failed', `${program} could not run: ${error.code ?? error.message}`));
        }
      },
    );
  });
}
