/** Reading the repository's own files from deployment tests. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export const readRepoFile = (path: string): string => readFileSync(join(REPO_ROOT, path), 'utf8');
export const repoFileExists = (path: string): boolean => existsSync(join(REPO_ROOT, path));

/** A YAML file of the repository; `<<` merge keys are resolved, as Docker Compose does. */
export const readYaml = (path: string): unknown => parse(readRepoFile(path), { merge: true });

/** Paths (relative to the repository) of the `.ts` files under `dir`. */
export function sourceFiles(dir: string): string[] {
  const root = join(REPO_ROOT, dir);
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => relative(REPO_ROOT, join(entry.parentPath, entry.name)));
}
