/**
 * The README's pictures are drawn from what the bot's code builds: regenerating them must give the files
 * committed, byte for byte, and the Block Kit Builder link must carry the same blocks. After a change to
 * the card or the timeline, run `npx tsx scripts/render-pictures.ts`.
 */
import { readFileSync } from 'node:fs';
import { DomUtils, parseDocument } from 'htmlparser2';
import { describe, expect, it } from 'vitest';
import { mrkdwnLines } from '../../scripts/pictures/mrkdwn-runs.js';
import { blockKitBuilderUrl, pictureFiles } from '../../scripts/pictures/pictures.js';
import { SAMPLE_NAMES, sampleApprovalCard, sampleTimeline } from '../../scripts/pictures/samples.js';
import { ACTION_IDS } from '../../src/slack/ids.js';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
/** The texts of a message's blocks, as Slack shows them (mrkdwn and plain text, buttons' labels). */
function texts(message: { blocks: readonly unknown[] }): string[] {
  const found: string[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (node && typeof node === 'object') {
      const o = node as Record<string, unknown>;
      if ((o.type === 'mrkdwn' || o.type === 'plain_text') && typeof o.text === 'string') found.push(o.text);
      else Object.values(o).forEach(visit);
    }
  };
  visit(message.blocks);
  return found;
}

const RENDER = 'run `npx tsx scripts/render-pictures.ts`';

describe('the pictures in docs/pictures', () => {
  it('are exactly what the card and timeline code build now', async () => {
    for (const [path, content] of await pictureFiles()) {
      expect(read(path), `${path} is out of date: ${RENDER}`).toBe(content);
    }
  });

  it('show a pending card with its real buttons, and are well-formed SVG', async () => {
    const card = JSON.parse(read('docs/pictures/approval-card.json')) as { blocks: unknown[] };
    const actionIds = JSON.stringify(card.blocks);
    for (const id of [ACTION_IDS.approve, ACTION_IDS.reject]) expect(actionIds).toContain(id);
    for (const name of ['approval-card.svg', 'timeline.svg']) {
      const svg = read(`docs/pictures/${name}`);
      const root = parseDocument(svg, { xmlMode: true }).children.find((n) => n.type === 'tag');
      expect(root && 'name' in root ? root.name : undefined).toBe('svg');
    }
    expect(read('docs/pictures/approval-card.svg')).toContain('>Approve</text>');
  });

  it('leave out no word of the card or the timeline', async () => {
    const drawn = (name: string) =>
      DomUtils.textContent(parseDocument(read(`docs/pictures/${name}`), { xmlMode: true }))
        .replaceAll('&amp;', '&')
        .replace(/\s+/g, '');
    const card = drawn('approval-card.svg');
    for (const text of texts(await sampleApprovalCard())) {
      const visible = mrkdwnLines(text, SAMPLE_NAMES)
        .flatMap((line) => line.runs.map((run) => run.text))
        .join('');
      expect(card).toContain(visible.replace(/\s+/g, ''));
    }
    const timeline = drawn('timeline.svg');
    for (const step of sampleTimeline()) {
      for (const text of [
        step.title,
        step.output,
        step.details,
        ...(step.sources ?? []).map((s) => s.text),
      ]) {
        if (text) expect(timeline).toContain(text.replace(/\s+/g, ''));
      }
    }
  });

  it('link docs/approvals.md to Block Kit Builder with the same blocks', async () => {
    const { blocks } = await sampleApprovalCard();
    const links = [
      ...read('docs/approvals.md').matchAll(/https:\/\/app\.slack\.com\/block-kit-builder\/?#[^)\s]+/g),
    ];
    expect(links.map((m) => m[0])).toEqual([blockKitBuilderUrl(blocks)]);
    const fragment = decodeURIComponent((links[0]?.[0] ?? '').split('#')[1] ?? '');
    expect(JSON.parse(fragment)).toEqual(JSON.parse(read('docs/pictures/approval-card.json')));
  });

  it('appear in the README', () => {
    const readme = read('README.md');
    expect(readme).toContain('](docs/pictures/approval-card.svg)');
    expect(readme).toContain('](docs/pictures/timeline.svg)');
  });
});
