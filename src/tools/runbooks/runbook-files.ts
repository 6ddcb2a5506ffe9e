/**
 * The Markdown files of the runbook directory, read fresh on every call (runbooks change while the bot
 * runs, and a directory of runbooks is small). Paths given by the model are confined to the directory:
 * `..`, absolute paths and symbolic links leading outside are refused.
 */
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ToolError } from '../errors.js';

interface RunbookLimits {
  /** Files beyond this count are ignored (the walk stops). */
  maxFiles: number;
  /** Larger files are skipped by search and refused by read. */
  maxFileBytes: number;
}

export interface RunbookFile {
  /** Path relative to the runbook directory, with `/` separators, e.g. `payments/latency.md`. */
  path: string;
  text: string;
}

const MARKDOWN = /\.(md|markdown)$/i;

function toPosix(path: string): string {
  return path.split(sep).join('/');
}

async function walk(root: string, dir: string, limits: RunbookLimits, found: string[]): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const entry of entries) {
    if (found.length >= limits.maxFiles) return;
    if (entry.name.startsWith('.')) continue;
    const full = join(dir, entry.name);
    // Symbolic links are skipped by the walk: they could lead out of the directory.
    if (entry.isDirectory()) await walk(root, full, limits, found);
    else if (entry.isFile() && MARKDOWN.test(entry.name)) found.push(toPosix(relative(root, full)));
  }
}

/** Every runbook under `root` that is within the size limit, in path order. */
export async function listRunbooks(root: string, limits: RunbookLimits): Promise<RunbookFile[]> {
  const paths: string[] = [];
  try {
    await walk(root, root, limits, paths);
  } catch (err) {
    throw new ToolError(
      'runbooks_unavailable',
      `cannot read the runbook directory: ${(err as Error).message}`,
    );
  }
  const files: RunbookFile[] = [];
  for (const path of paths) {
    const full = join(root, path);
    if ((await stat(full)).size > limits.maxFileBytes) continue;
    files.push({ path, text: await readFile(full, 'utf8') });
  }
  return files;
}

function outside(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel === '' || rel.startsWith('..') || isAbsolute(rel);
}

/** Reads one runbook by its relative path, refusing anything that resolves outside `root`. */
export async function readRunbookFile(
  root: string,
  path: string,
  limits: RunbookLimits,
): Promise<RunbookFile> {
  const outsideError = new ToolError(
    'path_not_allowed',
    `${path} is outside the runbook directory; use a path that search_runbooks returned`,
  );
  if (isAbsolute(path) || path.includes('\0')) throw outsideError;
  const target = resolve(root, path);
  if (outside(root, target)) throw outsideError;
  if (!MARKDOWN.test(target)) throw new ToolError('not_a_runbook', `${path} is not a Markdown (.md) file`);
  let real: string;
  try {
    real = await realpath(target);
  } catch {
    throw new ToolError('runbook_not_found', `no runbook at ${path}; use search_runbooks to find one`);
  }
  if (outside(await realpath(root), real)) throw outsideError;
  const info = await stat(real);
  if (!info.isFile())
    throw new ToolError('runbook_not_found', `no runbook at ${path}; use search_runbooks to find one`);
  if (info.size > limits.maxFileBytes) {
    throw new ToolError('runbook_too_large', `${path} is larger than ${limits.maxFileBytes} bytes`);
  }
  return { path: toPosix(relative(root, target)), text: await readFile(real, 'utf8') };
}
