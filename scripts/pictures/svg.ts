/**
 * Draws a Slack message of Block Kit blocks, or a run's timeline of task updates, as an SVG in Slack's
 * light theme. Text is wrapped by an estimate of glyph widths (generous, so nothing overflows), which
 * keeps the output a pure function of its input: the test regenerates it and compares byte for byte.
 */
import type { KnownBlock } from '../../src/slack/block-kit.js';
import type { TaskUpdate } from '../../src/slack/surfaces/stream-writer.js';
import { mrkdwnLines, type Run, type RunStyle, type StyledLine } from './mrkdwn-runs.js';

const WIDTH = 640;
const LEFT = 72; // where the message's content starts, right of the avatar
const RIGHT = WIDTH - 24;
const SANS = "-apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif";
const MONO = "Menlo, Consolas, 'DejaVu Sans Mono', monospace";
const INK = '#1d1c1d';
const GREY = '#616061';
const BLUE = '#1264a3';

const xml = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

/** A generous width of one character at `size`: wide glyphs and emoji count double. */
function charWidth(ch: string, style: RunStyle, size: number): number {
  if (style === 'code') return size * 0.62;
  if ((ch.codePointAt(0) ?? 0) > 0x2000) return size * 1.1;
  return size * (style === 'bold' ? 0.6 : 0.56);
}

export const runWidth = (text: string, style: RunStyle, size: number) =>
  [...text].reduce((sum, ch) => sum + charWidth(ch, style, size), 0);

/** Splits runs into drawn lines no wider than `max`, breaking at spaces (or anywhere in a long word). */
export function wrap(runs: Run[], max: number, size: number): Run[][] {
  const lines: Run[][] = [[]];
  let used = 0;
  for (const run of runs) {
    for (const word of run.text.split(/(?<= )/)) {
      let rest = word;
      while (rest !== '') {
        const width = runWidth(rest, run.style, size);
        if (used + width <= max || (used === 0 && width <= max)) {
          lines.at(-1)?.push({ text: rest, style: run.style });
          used += width;
          rest = '';
        } else if (used > 0) {
          lines.push([]);
          used = 0;
          rest = rest.trimStart();
        } else {
          let fit = 0;
          let w = 0;
          for (const ch of rest) {
            w += charWidth(ch, run.style, size);
            if (w > max) break;
            fit += ch.length;
          }
          lines.at(-1)?.push({ text: rest.slice(0, fit), style: run.style });
          lines.push([]);
          rest = rest.slice(fit);
        }
      }
    }
  }
  return lines;
}

function tspan(run: Run): string {
  const attrs: Record<RunStyle, string> = {
    plain: '',
    bold: ' font-weight="700"',
    italic: ' font-style="italic"',
    code: ` font-family="${MONO}" fill="#e01e5a"`,
    mention: ` font-weight="700" fill="${BLUE}"`,
    link: ` fill="${BLUE}"`,
  };
  return `<tspan${attrs[run.style]}>${xml(run.text)}</tspan>`;
}

/** Collects SVG elements top to bottom. */
class Canvas {
  readonly parts: string[] = [];
  y = 16;

  text(lines: StyledLine[], opts: { size: number; fill: string; x?: number }): void {
    const x = opts.x ?? LEFT;
    const lineHeight = Math.round(opts.size * 1.45);
    for (const line of lines) {
      const code = line.codeBlock;
      const runs = code ? line.runs.map((r) => ({ ...r, style: 'plain' as RunStyle })) : line.runs;
      for (const drawn of wrap(runs, RIGHT - x - (code ? 16 : 0), opts.size)) {
        if (code) {
          this.parts.push(
            `<rect x="${x}" y="${this.y}" width="${RIGHT - x}" height="${lineHeight}" fill="#f8f8f8"/>`,
          );
        }
        const family = code ? ` font-family="${MONO}"` : '';
        const body = drawn.map(tspan).join('');
        this.parts.push(
          `<text x="${x + (code ? 8 : 0)}" y="${this.y + Math.round(opts.size * 1.1)}" font-size="${code ? opts.size - 1 : opts.size}" fill="${opts.fill}"${family} xml:space="preserve">${body}</text>`,
        );
        this.y += lineHeight;
      }
    }
  }

  gap(pixels: number): void {
    this.y += pixels;
  }
}

function plainLines(text: string, style: RunStyle = 'plain'): StyledLine[] {
  return text.split('\n').map((line) => ({ runs: [{ text: line, style }], codeBlock: false }));
}

function buttons(canvas: Canvas, elements: readonly unknown[]): void {
  let x = LEFT;
  for (const element of elements as Array<{ text?: { text?: string }; style?: string }>) {
    const label = element.text?.text ?? '';
    const width = Math.ceil(runWidth(label, 'bold', 14)) + 28;
    if (x + width > RIGHT) {
      x = LEFT;
      canvas.gap(38);
    }
    const [fill, stroke, ink] =
      element.style === 'primary'
        ? ['#007a5a', '#007a5a', '#ffffff']
        : element.style === 'danger'
          ? ['#ffffff', '#bbbbbb', '#e01e5a']
          : ['#ffffff', '#bbbbbb', INK];
    canvas.parts.push(
      `<rect x="${x}" y="${canvas.y}" width="${width}" height="30" rx="4" fill="${fill}" stroke="${stroke}"/>`,
      `<text x="${x + width / 2}" y="${canvas.y + 20}" font-size="14" font-weight="700" fill="${ink}" text-anchor="middle">${xml(label)}</text>`,
    );
    x += width + 8;
  }
  canvas.gap(38);
}

function block(canvas: Canvas, b: KnownBlock, names: Readonly<Record<string, string>>): void {
  switch (b.type) {
    case 'header':
      canvas.text(plainLines(b.text.text, 'bold'), { size: 18, fill: INK });
      canvas.gap(6);
      return;
    case 'section':
      if (b.text) canvas.text(mrkdwnLines(b.text.text, names), { size: 15, fill: INK });
      canvas.gap(8);
      return;
    case 'context': {
      const runs = b.elements.flatMap((e, i) => {
        const space = i > 0 ? [{ text: ' ', style: 'plain' as RunStyle }] : [];
        if (e.type === 'mrkdwn') return [...space, ...(mrkdwnLines(e.text, names)[0]?.runs ?? [])];
        if (e.type === 'plain_text') return [...space, { text: e.text, style: 'plain' as RunStyle }];
        return [];
      });
      canvas.text([{ runs, codeBlock: false }], { size: 13, fill: GREY });
      canvas.gap(8);
      return;
    }
    case 'actions':
      canvas.gap(4);
      buttons(canvas, b.elements);
      return;
    case 'divider':
      canvas.parts.push(
        `<line x1="${LEFT}" x2="${RIGHT}" y1="${canvas.y}" y2="${canvas.y}" stroke="#dddddd"/>`,
      );
      canvas.gap(12);
      return;
    default:
      canvas.text(plainLines(`(${b.type} block)`), { size: 13, fill: GREY });
  }
}

/** The bot's avatar, name and time above a message. */
function byline(canvas: Canvas, time: string): void {
  canvas.parts.push(
    `<rect x="20" y="${canvas.y}" width="38" height="38" rx="6" fill="#4a154b"/>`,
    `<text x="39" y="${canvas.y + 25}" font-size="15" font-weight="700" fill="#ffffff" text-anchor="middle">lg</text>`,
    `<text x="${LEFT}" y="${canvas.y + 14}" font-size="15" fill="${INK}"><tspan font-weight="700">loopgate</tspan><tspan font-size="11" fill="${GREY}" dx="6">APP</tspan><tspan font-size="12" fill="${GREY}" dx="8">${xml(time)}</tspan></text>`,
  );
  canvas.gap(24);
}

function svgDocument(canvas: Canvas, title: string): string {
  const height = canvas.y + 12;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="${SANS}" role="img" aria-label="${xml(title)}">`,
    `<title>${xml(title)}</title>`,
    `<rect width="${WIDTH}" height="${height}" rx="8" fill="#ffffff" stroke="#dddddd"/>`,
    ...canvas.parts,
    '</svg>',
    '',
  ].join('\n');
}

/** A message of Block Kit blocks as the bot posts it; `names` resolves ids in mentions. */
export function messageSvg(
  blocks: readonly KnownBlock[],
  opts: { names: Readonly<Record<string, string>>; time: string; title: string },
): string {
  const canvas = new Canvas();
  byline(canvas, opts.time);
  for (const b of blocks) block(canvas, b, opts.names);
  return svgDocument(canvas, opts.title);
}

const STATUS: Record<TaskUpdate['status'], { mark: string; colour: string }> = {
  complete: { mark: '✓', colour: '#007a5a' },
  in_progress: { mark: '…', colour: BLUE },
  pending: { mark: '◷', colour: '#e8912d' },
  error: { mark: '✕', colour: '#e01e5a' },
};

/** A run's timeline: each step's status, title, output or details, and sources. */
export function timelineSvg(steps: readonly TaskUpdate[], opts: { time: string; title: string }): string {
  const canvas = new Canvas();
  byline(canvas, opts.time);
  for (const step of steps) {
    const { mark, colour } = STATUS[step.status];
    canvas.parts.push(
      `<circle cx="${LEFT + 9}" cy="${canvas.y + 11}" r="10" fill="${colour}"/>`,
      `<text x="${LEFT + 9}" y="${canvas.y + 16}" font-size="13" font-weight="700" fill="#ffffff" text-anchor="middle">${xml(mark)}</text>`,
    );
    canvas.text(plainLines(step.title, 'bold'), { size: 14, fill: INK, x: LEFT + 28 });
    const notes = [step.details, step.output].filter((n): n is string => n !== undefined);
    const links = (step.sources ?? []).map((s): Run => ({ text: s.text, style: 'link' }));
    const lines: StyledLine[] = notes.map((n) => ({ runs: [{ text: n, style: 'plain' }], codeBlock: false }));
    if (links.length > 0) lines.push({ runs: links, codeBlock: false });
    canvas.text(lines, { size: 13, fill: GREY, x: LEFT + 28 });
    canvas.gap(10);
  }
  return svgDocument(canvas, opts.title);
}
