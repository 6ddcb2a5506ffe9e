/** The repository's Markdown documents, their links and their fenced blocks, for the documentation tests. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** README.md, the other top-level documents and everything under docs/, as paths from the root. */
export function markdownFiles(): string[] {
  const top = ['README.md', 'CHANGELOG.md'].filter((f) => existsSync(`${REPO_ROOT}${f}`));
  const docs = readdirSync(`${REPO_ROOT}docs`, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`);
  return [...top, ...docs.sort()];
}

export const readRepo = (path: string) => readFileSync(`${REPO_ROOT}${path}`, 'utf8');

/** Text outside fenced code blocks and inline code, where Markdown links live. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** The targets of `[text](target)` and `![alt](target)` links. */
export function linkTargets(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string);
}

/** GitHub's anchors for a document's headings: lower case, punctuation dropped, spaces as `-`, repeats numbered. */
export function headingAnchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  const withoutCode = markdown.replace(/^```[\s\S]*?^```$/gm, '');
  for (const m of withoutCode.matchAll(/^#{1,6} (.+)$/gm)) {
    const base = (m[1] as string)
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

export interface FencedBlock {
  /** The word after the opening fence (`sh`, `yaml`), '' when none. */
  lang: string;
  /** The words after it: `runnable`, `file=loopgate.yaml`, … */
  tags: string[];
  body: string;
}

export function fencedBlocks(markdown: string): FencedBlock[] {
  return [...markdown.matchAll(/^```([^\n]*)\n([\s\S]*?)^```$/gm)].map((m) => {
    const [lang = '', ...tags] = (m[1] as string).trim().split(/\s+/);
    return { lang, tags, body: m[2] as string };
  });
}
