/**
 * The README is one screen that sells and guides (at most 12 KB); every relative link in it and in docs/
 * reaches a file that exists and, with an anchor, a heading of that file.
 */
import { existsSync, statSync } from 'node:fs';
import { dirname, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { headingAnchors, linkTargets, markdownFiles, REPO_ROOT, readRepo } from './markdown-files.js';

describe('README.md', () => {
  it('is at most 12,288 bytes', () => {
    expect(statSync(`${REPO_ROOT}README.md`).size).toBeLessThanOrEqual(12_288);
  });
});

describe('relative links in README.md and docs/', () => {
  const files = markdownFiles();

  it('finds the documents', () => {
    expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/operations.md', 'docs/approvals.md']));
  });

  it.each(files)('%s: every relative link resolves, anchors included', (file) => {
    const broken: string[] = [];
    for (const target of linkTargets(readRepo(file))) {
      if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
      const [path = '', anchor] = target.split('#', 2);
      const resolved = path === '' ? file : normalize(`${dirname(file)}/${path}`);
      if (!existsSync(`${REPO_ROOT}${resolved}`)) {
        broken.push(`${target}: no file ${resolved}`);
        continue;
      }
      if (
        anchor !== undefined &&
        resolved.endsWith('.md') &&
        !headingAnchors(readRepo(resolved)).has(anchor)
      ) {
        broken.push(`${target}: no heading #${anchor} in ${resolved}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
