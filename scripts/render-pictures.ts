/**
 * `npx tsx scripts/render-pictures.ts`: writes docs/pictures/ from the card and timeline code, and points
 * the Block Kit Builder link in docs/approvals.md at the card's JSON. test/docs/pictures.test.ts fails
 * until this is run after a change to what the bot posts.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { blockKitBuilderUrl, pictureFiles } from './pictures/pictures.js';
import { sampleApprovalCard } from './pictures/samples.js';

const root = new URL('../', import.meta.url);

for (const [path, content] of await pictureFiles()) {
  writeFileSync(new URL(path, root), content);
  console.log(`wrote ${path}`);
}

const approvalsDoc = new URL('docs/approvals.md', root);
const doc = readFileSync(approvalsDoc, 'utf8');
const url = blockKitBuilderUrl((await sampleApprovalCard()).blocks);
const updated = doc.replace(/https:\/\/app\.slack\.com\/block-kit-builder\/?#[^)\s]*/g, url);
if (updated === doc && !doc.includes(url)) throw new Error('docs/approvals.md has no Block Kit Builder link');
writeFileSync(approvalsDoc, updated);
console.log('updated the Block Kit Builder link in docs/approvals.md');
