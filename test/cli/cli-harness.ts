/**
 * Runs the real CLI (bin/loopgate.js) as a child process, on the TypeScript sources through tsx
 * (LOOPGATE_FROM_SOURCE=1), so the tests exercise the code as it is rather than the last build.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(REPO_ROOT, 'bin/loopgate.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * A working directory without a `.env`, so a developer's own .env never leaks into a test; `remove`
 * deletes it.
 */
export function emptyWorkDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'loopgate-cli-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** `node bin/loopgate.js ...args` with only PATH, LOOPGATE_FROM_SOURCE and `env` in its environment. */
export function runCli(
  args: readonly string[],
  env: Record<string, string>,
  cwd: string,
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd, env: { PATH: process.env.PATH ?? '', LOOPGATE_FROM_SOURCE: '1', ...env }, timeout: 15_000 },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') reject(error);
        else resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
      },
    );
  });
}
