/**
 * Slack mrkdwn as styled runs of text, the way Slack's client shows it: `*bold*`, `_italic_`, `` `code` ``,
 * fenced code blocks, and the `<…>` tokens (user and group mentions, dates, links) as their visible text.
 * Only what the pictures need; unknown tokens are shown as written.
 */

export type RunStyle = 'plain' | 'bold' | 'italic' | 'code' | 'mention' | 'link';

export interface Run {
  text: string;
  style: RunStyle;
}

/** One line as drawn: its runs, and whether it belongs to a fenced code block. */
export interface StyledLine {
  runs: Run[];
  codeBlock: boolean;
}

const unescapeEntities = (text: string) =>
  text.replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');

/** The visible text of a `<…>` token; `names` resolves user and group ids. */
function token(inner: string, names: Readonly<Record<string, string>>): Run {
  const user = /^@([UW][A-Z0-9]+)$/.exec(inner);
  if (user) return { text: `@${names[user[1] as string] ?? user[1]}`, style: 'mention' };
  const group = /^!subteam\^([A-Z0-9]+)/.exec(inner);
  if (group) return { text: `@${names[group[1] as string] ?? group[1]}`, style: 'mention' };
  const date = /^!date\^[^|]*\|(.*)$/.exec(inner);
  if (date) return { text: date[1] as string, style: 'plain' };
  const [target, label] = inner.split('|', 2);
  return { text: unescapeEntities(label ?? target ?? inner), style: 'link' };
}

const INLINE = /<([^>\n]+)>|`([^`\n]+)`|\*([^*\n]+)\*|(?<![A-Za-z0-9])_([^_\n]+)_(?![A-Za-z0-9])/g;

function inlineRuns(line: string, names: Readonly<Record<string, string>>): Run[] {
  const runs: Run[] = [];
  let at = 0;
  for (const m of line.matchAll(INLINE)) {
    if (m.index > at) runs.push({ text: unescapeEntities(line.slice(at, m.index)), style: 'plain' });
    if (m[1] !== undefined) runs.push(token(m[1], names));
    else if (m[2] !== undefined) runs.push({ text: unescapeEntities(m[2]), style: 'code' });
    else if (m[3] !== undefined) {
      // Bold may hold tokens and code; they keep their own style.
      for (const inner of inlineRuns(m[3], names))
        runs.push(inner.style === 'plain' ? { ...inner, style: 'bold' } : inner);
    } else runs.push({ text: unescapeEntities(m[4] ?? ''), style: 'italic' });
    at = m.index + m[0].length;
  }
  if (at < line.length) runs.push({ text: unescapeEntities(line.slice(at)), style: 'plain' });
  return runs;
}

/** A mrkdwn text as lines of runs; fenced code keeps its lines as written. */
export function mrkdwnLines(text: string, names: Readonly<Record<string, string>>): StyledLine[] {
  const lines: StyledLine[] = [];
  let inCode = false;
  for (const raw of text.split('\n')) {
    if (raw.trim() === '```') {
      inCode = !inCode;
      continue;
    }
    lines.push(
      inCode
        ? { runs: [{ text: unescapeEntities(raw), style: 'code' }], codeBlock: true }
        : { runs: inlineRuns(raw, names), codeBlock: false },
    );
  }
  return lines;
}
