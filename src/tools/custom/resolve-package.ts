/**
 * Finds the module of a tool package the way Node finds a bare import from the project: the nearest
 * `node_modules/<name>` above the policy file's directory, then its `exports["."]` (the `import`, `node`
 * or `default` condition), `module`, `main` or `index.js`. Done by hand because `require.resolve` skips
 * packages that export for `import` only, and `import.meta.resolve` resolves from loopgate, not the project.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** An npm package name, scoped or not. */
export const PACKAGE_NAME = /^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/;

const CONDITIONS = ['import', 'node', 'default'];

/** The file a package `exports` entry points to under the conditions loopgate's import meets. */
function exportTarget(entry: unknown): string | undefined {
  if (typeof entry === 'string') return entry;
  if (Array.isArray(entry)) {
    for (const item of entry) {
      const found = exportTarget(item);
      if (found) return found;
    }
    return undefined;
  }
  if (entry === null || typeof entry !== 'object') return undefined;
  const record = entry as Record<string, unknown>;
  if ('.' in record) return exportTarget(record['.']);
  for (const [condition, value] of Object.entries(record)) {
    if (CONDITIONS.includes(condition)) {
      const found = exportTarget(value);
      if (found) return found;
    }
  }
  return undefined;
}

function entryOf(dir: string): string | undefined {
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, unknown>;
  const target =
    manifest.exports === undefined
      ? ([manifest.module, manifest.main].find((v): v is string => typeof v === 'string') ?? 'index.js')
      : exportTarget(manifest.exports);
  return target === undefined ? undefined : resolve(dir, target);
}

/** Absolute path of `name`'s entry module as seen from `fromDir`, or undefined when not installed. */
export function resolvePackage(name: string, fromDir: string): string | undefined {
  for (let dir = resolve(fromDir); ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return entryOf(candidate);
    if (dirname(dir) === dir) return undefined;
  }
}
