import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TempDir {
  /** Absolute path of the directory (also a clean working directory: no `.env` in it). */
  dir: string;
  /** Writes `text` to `name` in the directory and returns its absolute path. */
  write(name: string, text: string): string;
  remove(): void;
}

/** A fresh temporary directory for a test's policy files, removed by `remove()`. */
export function tempDir(): TempDir {
  const dir = mkdtempSync(join(tmpdir(), 'loopgate-e2e-'));
  return {
    dir,
    write(name, text) {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A policy that enables `http_get` for one local server (a private address, so `allowPrivate`). */
export function httpGetPolicy(allowedUrl: string, approvers: readonly string[] = ['U0MGR']): string {
  return [
    'approvals:',
    `  approvers: [${approvers.join(', ')}]`,
    'tools:',
    '  http_get:',
    '    allow:',
    `      - prefix: ${JSON.stringify(allowedUrl)}`,
    '        allowPrivate: true',
    '',
  ].join('\n');
}
