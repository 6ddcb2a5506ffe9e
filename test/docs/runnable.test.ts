/**
 * Every fenced shell block marked `sh runnable` in README.md and docs/ is run, in the order of its
 * document, as a new user would run it: in a temporary directory holding the repository's files (links
 * to them; `.env` and `loopgate.yaml` left out), with Redis under a key prefix of its own and no Slack or
 * model secrets. A block marked `yaml file=NAME` (any language) is written to NAME there first.
 * `npm ci` lines are skipped: the modules are installed already (CI's .ci/run runs `npm ci` itself).
 * Blocks marked `after-first-hour` use commands not on main yet and become `runnable` once they land.
 * stdin is empty: an interactive command reads the end of its input and stops.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { type FencedBlock, fencedBlocks, markdownFiles, REPO_ROOT, readRepo } from './markdown-files.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const KNOWN_TAGS = /^(runnable|after-first-hour|file=[\w.-]+)$/;
/** Files a new user writes themselves: never taken from the checkout. */
// A fresh clone has no build either: the CLI then runs the sources (bin/loopgate.js).
const NOT_LINKED = new Set(['.git', '.env', 'loopgate.yaml', 'dist']);

const isRunnable = (b: FencedBlock) => b.lang === 'sh' && b.tags.includes('runnable');
const fileOf = (b: FencedBlock) => b.tags.find((t) => t.startsWith('file='))?.slice('file='.length);

/** A directory that looks like a fresh checkout after `npm ci`. */
function freshCheckout(): string {
  const dir = mkdtempSync(join(tmpdir(), 'loopgate-docs-'));
  for (const entry of readdirSync(REPO_ROOT)) {
    if (entry === 'bin') {
      // Copied, not linked: the CLI finds dist/ beside itself, and the repository's dist/ may be a build
      // of other sources (or one being written by the package test).
      cpSync(join(REPO_ROOT, entry), join(dir, entry), { recursive: true });
    } else if (!NOT_LINKED.has(entry)) symlinkSync(join(REPO_ROOT, entry), join(dir, entry));
  }
  return dir;
}

interface Ran {
  code: number | null;
  output: string;
}

function runShell(script: string, cwd: string, env: Record<string, string>, timeoutMs: number): Promise<Ran> {
  return new Promise((resolve) => {
    // stdin at its end, as in CI: an interactive command (npm run chat) sees the end of its input and stops.
    const child = spawn('bash', ['-eo', 'pipefail', '-c', script], {
      cwd,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      output += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      output += c;
    });
    const timer = setTimeout(() => {
      output += `\n(killed after ${timeoutMs} ms)`;
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

const prefixes: string[] = [];
afterAll(async () => {
  const redis = new Redis(REDIS_URL);
  try {
    for (const prefix of prefixes) {
      const keys = await redis.keys(`*${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
    }
  } finally {
    redis.disconnect();
  }
});

const documents = markdownFiles().map((file) => ({ file, blocks: fencedBlocks(readRepo(file)) }));

describe('fenced blocks in README.md and docs/', () => {
  it('carry only known marks', () => {
    const unknown = documents.flatMap(({ file, blocks }) =>
      blocks.flatMap((b) => b.tags.filter((t) => !KNOWN_TAGS.test(t)).map((t) => `${file}: ${b.lang} ${t}`)),
    );
    expect(unknown).toEqual([]);
  });

  it('include runnable blocks in the README: the try and the CLI', () => {
    const readme = documents.find((d) => d.file === 'README.md');
    const runnable = readme?.blocks.filter(isRunnable).map((b) => b.body) ?? [];
    expect(runnable.some((body) => body.includes('npm run demo'))).toBe(true);
    expect(runnable.some((body) => body.includes('npx loopgate check-config'))).toBe(true);
  });
});

const withRunnable = documents.filter(({ blocks }) => blocks.some(isRunnable));

describe.each(withRunnable)('runnable commands of $file', ({ file, blocks }) => {
  it('all succeed, in order, in a fresh checkout', { timeout: 300_000 }, async () => {
    const dir = freshCheckout();
    const prefix = `docs-${randomBytes(4).toString('hex')}`;
    prefixes.push(prefix);
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? dir,
      REDIS_URL,
      LOOPGATE_PREFIX: `{${prefix}}`,
    };
    try {
      for (const block of blocks) {
        const name = fileOf(block);
        if (name) writeFileSync(join(dir, name), block.body);
        if (!isRunnable(block)) continue;
        const script = block.body
          .split('\n')
          .filter((line) => line.trim() !== 'npm ci')
          .join('\n');
        const ran = await runShell(script, dir, env, 240_000);
        expect(ran.code, `${file}:\n${block.body}\n--- output ---\n${ran.output}`).toBe(0);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
