/**
 * The README's pictures as files: for each, the JSON the code builds and the SVG drawn from it. Shared by
 * `scripts/render-pictures.ts`, which writes them, and the test that fails when they drift from the code.
 */
import type { KnownBlock } from '../../src/slack/block-kit.js';
import { SAMPLE_NAMES, sampleApprovalCard, sampleTimeline } from './samples.js';
import { messageSvg, timelineSvg } from './svg.js';

export const PICTURES_DIR = 'docs/pictures';

/** Percent-encodes everything but letters, digits and `-_.`, so the URL also survives Markdown's `( )`. */
const encodeStrictly = (text: string) =>
  encodeURIComponent(text).replace(/[!'()*~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** Slack's Block Kit Builder opened on these blocks (the JSON travels in the URL's fragment). */
export function blockKitBuilderUrl(blocks: readonly KnownBlock[]): string {
  return `https://app.slack.com/block-kit-builder/#${encodeStrictly(JSON.stringify({ blocks }))}`;
}

/** Path under the repository root → content, for every picture file. */
export async function pictureFiles(): Promise<Map<string, string>> {
  const card = await sampleApprovalCard();
  const steps = sampleTimeline();
  const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
  return new Map([
    [`${PICTURES_DIR}/approval-card.json`, json({ blocks: card.blocks })],
    [
      `${PICTURES_DIR}/approval-card.svg`,
      messageSvg(card.blocks, {
        names: SAMPLE_NAMES,
        time: '3:12 AM',
        title: 'An approval card: a prod restart waiting for a second SRE lead',
      }),
    ],
    [`${PICTURES_DIR}/timeline.json`, json({ chunks: steps })],
    [
      `${PICTURES_DIR}/timeline.svg`,
      timelineSvg(steps, { time: '3:12 AM', title: "A run's timeline: three reads done, a restart waiting" }),
    ],
  ]);
}
