/**
 * Finds `process.env` reads in custom tool code, for `check-config` to warn about: a variable read that
 * way is neither checked at start-up nor redacted from logs (declare it in `secrets` and read it with
 * `ctx.secret`). A textual scan, so a read built at run time escapes it; it flags, it does not prove.
 */
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

const ENV_READ = /\bprocess\s*(?:\.\s*env\b|\[\s*['"`]env['"`]\s*\])/;
const SOURCE = /\.(?:[cm]?js|[cm]?ts)$/;
/** A package's files scanned at most: enough for a tool package, bounded for a huge one. */
const MAX_FILES = 500;

interface EnvRead {
  file: string;
  /** 1-based. */
  line: number;
}

async function packageFiles(dir: string, out: string[]): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    if (out.length >= MAX_FILES) return;
    if (e.isDirectory()) {
      if (e.name !== 'node_modules' && !e.name.startsWith('.')) await packageFiles(join(dir, e.name), out);
    } else if (SOURCE.test(e.name) && !e.name.endsWith('.d.ts')) out.push(join(dir, e.name));
  }
}

/** The package directory holding `file` (the nearest `node_modules/<name>` or `node_modules/@s/<name>`). */
function packageDir(file: string): string {
  const parts = file.split('/');
  const at = parts.lastIndexOf('node_modules');
  const take = parts[at + 1]?.startsWith('@') ? at + 3 : at + 2;
  return parts.slice(0, take).join('/');
}

/** The line without a comment: a `//` tail, or the whole of a block comment's line (roughly). */
function codeOf(line: string): string {
  const trimmed = line.trimStart();
  if (trimmed.startsWith('*') || trimmed.startsWith('/*')) return '';
  const comment = line.search(/(^|\s)\/\//);
  return comment < 0 ? line : line.slice(0, comment);
}

/** Every line reading `process.env` in the module (a file), or in any file of its package. */
export async function envReads(entry: { path: string; package?: string | undefined }): Promise<EnvRead[]> {
  const files: string[] = [];
  if (entry.package && entry.path.includes('/node_modules/'))
    await packageFiles(packageDir(entry.path), files);
  else if (entry.package) await packageFiles(dirname(entry.path), files);
  else files.push(entry.path);
  const found: EnvRead[] = [];
  for (const file of files) {
    const text = await readFile(file, 'utf8').catch(() => '');
    text.split('\n').forEach((line, i) => {
      if (ENV_READ.test(codeOf(line))) found.push({ file, line: i + 1 });
    });
  }
  return found;
}
