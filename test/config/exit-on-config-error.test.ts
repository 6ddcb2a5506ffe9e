import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, type ExitIo, exitOnConfigError } from '../../src/config/errors.js';

class Exited extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

function recordingIo(): ExitIo & { stderr: string[] } {
  const stderr: string[] = [];
  return {
    stderr,
    writeStderr: (text) => stderr.push(text),
    exit: (code) => {
      throw new Exited(code);
    },
  };
}

describe('exitOnConfigError', () => {
  it('returns what start-up returns', async () => {
    await expect(exitOnConfigError(() => 42, recordingIo())).resolves.toBe(42);
    await expect(exitOnConfigError(async () => 'ok', recordingIo())).resolves.toBe('ok');
  });

  it('prints the ConfigError message to stderr and exits 1', async () => {
    const io = recordingIo();
    const error = new ConfigError('environment', [
      { key: 'PORT', problem: 'invalid value "x" (an integer)' },
    ]);
    await expect(
      exitOnConfigError(() => {
        throw error;
      }, io),
    ).rejects.toEqual(new Exited(1));
    expect(io.stderr).toEqual([
      'loopgate: invalid configuration in environment:\n  PORT: invalid value "x" (an integer)\n',
    ]);
  });

  it('rethrows any other error untouched and prints nothing', async () => {
    const io = recordingIo();
    const error = new TypeError('a bug');
    await expect(
      exitOnConfigError(async () => {
        throw error;
      }, io),
    ).rejects.toBe(error);
    expect(io.stderr).toEqual([]);
  });
});

describe('a real entry point with a bad environment', () => {
  const fixture = fileURLToPath(new URL('./fixtures/start-worker.ts', import.meta.url));
  const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
  // An empty working directory, so the repository's own .env (if any) is not read.
  const cwd = mkdtempSync(join(tmpdir(), 'loopgate-exit-'));
  afterAll(() => rmSync(cwd, { recursive: true, force: true }));

  const run = (env: Record<string, string>) =>
    promisify(execFile)(join(repoRoot, 'node_modules/.bin/tsx'), [fixture], {
      cwd,
      env: { PATH: process.env.PATH ?? '', ...env },
    });

  it('exits 1 naming each key, without a stack trace', async () => {
    const failure = await run({ SLACK_BOT_TOKEN: 'xoxb-1', PORT: 'abc' }).then(
      () => undefined,
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stdout).toBe('');
    expect(failure?.stderr).toBe(
      [
        'loopgate: invalid configuration in environment:',
        '  OPENAI_API_KEY: required (the API key of the OpenAI-compatible server)',
        '  PORT: invalid value "abc" (an integer from 1 to 65535, default 3000)',
        '',
      ].join('\n'),
    );
  });

  it('starts when the environment is good', async () => {
    const { stdout } = await run({ SLACK_BOT_TOKEN: 'xoxb-1', OPENAI_API_KEY: 'k' });
    expect(stdout).toBe('started with model gpt-4.1-mini\n');
  });
});
