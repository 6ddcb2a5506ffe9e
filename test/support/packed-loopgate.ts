/**
 * This checkout as a user gets it: `npm pack` (after `npm run build`), unpacked into a temporary copy of
 * examples/tool-package as its `node_modules/loopgate`. The registry is not used: the tarball's own
 * dependencies resolve through symlinks to this checkout's node_modules (the same versions the lockfile
 * pins). One tarball per content of the sources, shared by the test files that need it (a lock directory
 * keeps two files from building at once).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const EXAMPLE = join(REPO, 'examples', 'tool-package');
const bin = (path: string) => join(REPO, 'node_modules', path);
export const TSC = bin('typescript/bin/tsc');
export const VITEST = bin('vitest/vitest.mjs');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)],
  );
}

/** Hash of everything that goes into the package. */
function contentHash(): string {
  const hash = createHash('sha256');
  const files = [...filesUnder(join(REPO, 'src')), ...filesUnder(join(REPO, 'bin'))].sort();
  for (const f of [
    ...files,
    join(REPO, 'package.json'),
    join(REPO, 'scripts/build.mjs'),
    join(REPO, 'tsconfig.build.json'),
  ]) {
    hash.update(relative(REPO, f)).update(readFileSync(f));
  }
  return hash.digest('hex').slice(0, 16);
}

async function withLock<T>(dir: string, fn: () => T): Promise<T> {
  const lock = `${dir}.lock`;
  const deadline = Date.now() + 600_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // A lock older than 10 minutes was left by a killed run.
      if (Date.now() - statSync(lock, { throwIfNoEntry: false })!.mtimeMs > 600_000)
        rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lock}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Path of loopgate's tarball for the current sources, built and packed when not yet there. */
export async function packedTarball(): Promise<string> {
  const dir = join(tmpdir(), `loopgate-pack-${contentHash()}`);
  return withLock(dir, () => {
    const done = existsSync(dir) ? readdirSync(dir).find((f) => f.endsWith('.tgz')) : undefined;
    if (done) return join(dir, done);
    const building = `${dir}.tmp`;
    rmSync(building, { recursive: true, force: true });
    mkdirSync(building);
    execFileSync('npm', ['pack', '--pack-destination', building, '--silent'], { cwd: REPO, stdio: 'pipe' });
    renameSync(building, dir);
    const tgz = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    if (!tgz) throw new Error('npm pack wrote no tarball');
    return join(dir, tgz);
  });
}

export interface PackedProject {
  /** The copy of examples/tool-package, with loopgate installed from the tarball. */
  dir: string;
  tarball: string;
  remove(): void;
}

/** A temporary copy of the example package with the packed loopgate in its node_modules. */
export async function exampleWithPackedLoopgate(): Promise<PackedProject> {
  const tarball = await packedTarball();
  const dir = mkdtempSync(join(tmpdir(), 'loopgate-example-'));
  for (const entry of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'src', 'test']) {
    cpSync(join(EXAMPLE, entry), join(dir, entry), { recursive: true });
  }
  const modules = join(dir, 'node_modules');
  mkdirSync(modules);
  for (const name of readdirSync(join(REPO, 'node_modules'))) {
    if (name === 'loopgate' || name.startsWith('.')) continue;
    symlinkSync(join(REPO, 'node_modules', name), join(modules, name), 'dir');
  }
  execFileSync('tar', ['-xzf', tarball, '-C', modules]);
  renameSync(join(modules, 'package'), join(modules, 'loopgate'));
  return { dir, tarball, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
