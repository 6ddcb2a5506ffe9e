/**
 * Ranks runbook blocks (a heading and its text up to the next heading) against a query, BM25-style:
 * each query term found in a block adds its saturated frequency weighted by how rare the term is across
 * blocks; a term in the block's heading adds a boost, one in the file name a smaller one; blocks covering
 * more of the query's terms rank higher. Words are compared after a light stemming (restarts ≈ restart).
 */
import { blocks, headings, type LineRange, splitLines } from './markdown-sections.js';
import type { RunbookFile } from './runbook-files.js';

export interface SearchHit {
  path: string;
  /** Heading title, or the file name for text before the first heading. */
  title: string;
  range: LineRange;
  score: number;
  /** The block's best lines (most query terms), with their 1-based line numbers, in file order. */
  lines: Array<{ line: number; text: string }>;
}

const STOP = new Set(
  'a an and are as at be by can do does for from how i in is it of on or our the to we what when where which who why with you'.split(
    ' ',
  ),
);

/** A crude suffix stripper, enough to make plurals and verb forms meet (services, service → servic). */
export function stem(word: string): string {
  let w = word;
  if (w.length > 5 && w.endsWith('ies')) w = `${w.slice(0, -3)}y`;
  else if (w.length >= 7 && w.endsWith('ing')) w = w.slice(0, -3);
  else if (w.length >= 6 && w.endsWith('ed')) w = w.slice(0, -2);
  else if (w.length >= 4 && w.endsWith('s') && !w.endsWith('ss')) w = w.slice(0, -1);
  if (w.length >= 5 && w.endsWith('e')) w = w.slice(0, -1);
  return w;
}

function terms(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [])
    .filter((w) => w.length > 1 && !STOP.has(w))
    .map(stem);
}

interface Block {
  path: string;
  title: string;
  range: LineRange;
  lines: string[];
  /** Term counts of the body. */
  counts: Map<string, number>;
  headingTerms: Set<string>;
  fileTerms: Set<string>;
}

function count(words: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
  return counts;
}

function blocksOf(file: RunbookFile): Block[] {
  const lines = splitLines(file.text);
  const fileName = file.path.split('/').pop() ?? file.path;
  const fileTerms = terms(fileName.replace(/\.(md|markdown)$/i, ''));
  return blocks(headings(lines), lines.length).map((b) => {
    const own = lines.slice(b.from - 1, b.to);
    return {
      path: file.path,
      title: b.heading?.title ?? fileName,
      range: { from: b.from, to: b.to },
      lines: own,
      counts: count(terms(own.join('\n'))),
      headingTerms: new Set(terms(b.heading?.title ?? '')),
      fileTerms: new Set(fileTerms),
    };
  });
}

/** A term in the block's own heading weighs like a frequent body term and then some. */
const HEADING_BOOST = 2;
/** A term in the file name is context for every block of the file, so it weighs less. */
const FILE_BOOST = 0.5;
const SATURATION = 1.2;

function bestLines(block: Block, query: Set<string>, max: number): Array<{ line: number; text: string }> {
  const scored = block.lines
    .map((text, i) => ({
      line: block.range.from + i,
      text,
      hits: terms(text).filter((t) => query.has(t)).length,
    }))
    .filter((l) => l.hits > 0 && l.text.trim() !== '');
  scored.sort((a, b) => b.hits - a.hits || a.line - b.line);
  return scored
    .slice(0, max)
    .sort((a, b) => a.line - b.line)
    .map(({ line, text }) => ({ line, text: text.trim() }));
}

/** The `limit` best blocks for `query`; blocks matching no term are never returned. */
export function searchRunbooks(files: readonly RunbookFile[], query: string, limit: number): SearchHit[] {
  const wanted = [...new Set(terms(query))];
  if (wanted.length === 0) return [];
  const all = files.flatMap(blocksOf);
  const docFreq = new Map(
    wanted.map((t) => [
      t,
      all.filter((b) => b.counts.has(t) || b.headingTerms.has(t) || b.fileTerms.has(t)).length,
    ]),
  );
  const hits: SearchHit[] = [];
  for (const block of all) {
    let score = 0;
    let covered = 0;
    for (const term of wanted) {
      const tf = block.counts.get(term) ?? 0;
      const boost =
        (block.headingTerms.has(term) ? HEADING_BOOST : 0) + (block.fileTerms.has(term) ? FILE_BOOST : 0);
      if (tf === 0 && boost === 0) continue;
      covered++;
      const idf = Math.log(1 + all.length / (docFreq.get(term) ?? 1));
      score += idf * (tf / (tf + SATURATION) + boost);
    }
    if (covered === 0) continue;
    score *= covered / wanted.length;
    hits.push({
      path: block.path,
      title: block.title,
      range: block.range,
      score,
      lines: bestLines(block, new Set(wanted), 3),
    });
  }
  hits.sort((a, b) => b.score - a.score || a.path.localeCompare(b.path) || a.range.from - b.range.from);
  return hits.slice(0, limit);
}
