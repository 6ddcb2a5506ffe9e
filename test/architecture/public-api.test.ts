/**
 * The public API boundary (docs/architecture.md): the files of src/public only re-export; what they reach
 * imports no Slack, BullMQ, Redis or OpenAI SDK code (defining a tool must not load the bot); and the
 * package's `exports` map names only the public entry points, each built from a file of src/public.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const PUBLIC = join(ROOT, 'src', 'public');
const publicFiles = readdirSync(PUBLIC)
  .filter((f) => f.endsWith('.ts'))
  .map((f) => join(PUBLIC, f));

/** Statements of a file that are not `export … from '…'` re-exports (comments are not statements). */
function nonReexports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  return source.statements
    .filter((s) => !(ts.isExportDeclaration(s) && s.moduleSpecifier !== undefined))
    .map((s) => s.getText(source).split('\n')[0] ?? '');
}

/** Every package a file reaches through its relative imports (the whole closure), by file. */
function reachedPackages(entry: string): Map<string, string> {
  const seen = new Set<string>();
  const packages = new Map<string, string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const { fileName: spec } of ts.preProcessFile(readFileSync(file, 'utf8'), true, true)
      .importedFiles) {
      if (spec.startsWith('.')) visit(normalize(join(dirname(file), spec.replace(/\.js$/, '.ts'))));
      else if (!spec.startsWith('node:')) packages.set(spec, relative(ROOT, file));
    }
  };
  visit(entry);
  return packages;
}

describe('the public API', () => {
  it('is made of re-exports only', () => {
    expect(publicFiles.map((f) => relative(ROOT, f)).sort()).toEqual([
      'src/public/index.ts',
      'src/public/testing.ts',
    ]);
    for (const file of publicFiles) expect(nonReexports(file), relative(ROOT, file)).toEqual([]);
  });

  it('catches a statement that is not a re-export (the check can fail)', () => {
    const file = join(ROOT, 'test', 'architecture', 'public-api.test.ts');
    expect(nonReexports(file).length).toBeGreaterThan(0);
  });

  it('reaches neither Slack, BullMQ, Redis nor the OpenAI SDK', () => {
    for (const file of publicFiles) {
      const reached = reachedPackages(file);
      const banned = [...reached].filter(([spec]) =>
        /^(@slack\/|bullmq|ioredis|openai|@modelcontextprotocol\/)/.test(spec),
      );
      expect(
        banned.map(([spec, by]) => `${by} -> ${spec}`),
        relative(ROOT, file),
      ).toEqual([]);
    }
    // The check sees through the closure: the worker's start reaches BullMQ.
    expect(reachedPackages(join(ROOT, 'src', 'worker', 'start.ts')).has('bullmq')).toBe(true);
  });

  it("exposes only the public entry points in package.json's exports, each built from src/public", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      private?: boolean;
      exports: Record<string, string | { types: string; default: string }>;
      types: string;
      files: string[];
    };
    expect(pkg.private).toBeUndefined();
    expect(Object.keys(pkg.exports).sort()).toEqual(['.', './package.json', './testing']);
    for (const [key, name] of [
      ['.', 'index'],
      ['./testing', 'testing'],
    ] as const) {
      expect(pkg.exports[key]).toEqual({
        types: `./dist/public/${name}.d.ts`,
        default: `./dist/public/${name}.js`,
      });
    }
    expect(pkg.types).toBe('./dist/public/index.d.ts');
    expect(pkg.files).toContain('dist');
    expect(pkg.files).not.toContain('src');
  });
});
