import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { emptyWorkDir, REPO_ROOT, runCli } from './cli-harness.js';

const work = emptyWorkDir();
afterAll(() => work.remove());

describe('loopgate --version', { timeout: 30_000 }, () => {
  it("prints package.json's version, which CHANGELOG.md has a heading for, and exits 0", async () => {
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    const result = await runCli(['--version'], {}, work.dir);
    expect(result).toEqual({ code: 0, stdout: `loopgate ${version}\n`, stderr: '' });
    expect(readFileSync(join(REPO_ROOT, 'CHANGELOG.md'), 'utf8')).toContain(version);
  });
});
