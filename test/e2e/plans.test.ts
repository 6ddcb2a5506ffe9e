/**
 * Plans bound to the decision, end to end with loopgate's real processes (`npm run bot` and a `npm run
 * worker`), real Redis, the fake Slack and the fake OpenAI: a `run_action` action whose `plan` step is a
 * dry-run command reading the "world" from a file. The card shows the plan; a plan that changed between
 * the click and execution does not run and asks again on the same card; a plan that fails blocks it.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { nextRoundOf } from '../../src/store/ids.js';
import { callThenAnswer, succeeded } from './support/model-brains.js';
import { buttonsOf, wordsOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

const dir = mkdtempSync(join(tmpdir(), 'loopgate-plans-'));
/** What the dry-run prints: the file's text (a missing file makes it fail). */
const worldFile = join(dir, 'world.txt');
/** Each execution of the action appends a line here. */
const ranFile = join(dir, 'ran.txt');
const node = JSON.stringify(process.execPath);
const q = JSON.stringify;

const policyExtra = [
  '  run_action:',
  '    actions:',
  '      scale_web:',
  '        description: Scale the web deployment to 5 replicas',
  `        command: [${node}, "-e", ${q("require('node:fs').appendFileSync(process.argv[1], 'scaled\\n')")}, ${q(ranFile)}]`,
  '        plan:',
  `          command: [${node}, "-e", ${q("process.stdout.write(require('node:fs').readFileSync(process.argv[1], 'utf8'))")}, ${q(worldFile)}]`,
];

let w: SlackWorld;
beforeAll(async () => {
  w = await startSlackWorld({ mode: 'split', workers: 1, policyExtra });
}, 120_000);
afterAll(async () => {
  await w?.close();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

const ranLines = () => {
  try {
    return readFileSync(ranFile, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
};

async function askToScale(tag: string) {
  const channel = w.newChannel();
  w.model.brain(
    tag,
    callThenAnswer('run_action', { action: 'scale_web', params: {} }, (r) =>
      succeeded(r) ? 'Scaled.' : 'Not scaled.',
    ),
  );
  const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged(tag, 'scale web to 5'));
  const card = await w.card(asked);
  return { channel, asked, card };
}

describe('plans through the real bot and worker processes', { timeout: 90_000 }, () => {
  it('a plan that changed after the click does not run and asks again; approving the new plan runs it once', async () => {
    writeFileSync(worldFile, 'deployment/web: 3 -> 5 replicas\n');
    rmSync(ranFile, { force: true });
    const c = await askToScale('changed');
    expect(wordsOf(w.message(c.card))).toContain('deployment/web: 3 -&gt; 5 replicas');

    writeFileSync(worldFile, 'deployment/web: 4 -> 5 replicas\n');
    expect((await w.click(w.message(c.card), PEOPLE.manager, ACTION_IDS.approve)).status).toBe(200);
    const next = nextRoundOf(c.card.approvalId);
    await w.waitFor('the card asking again', () => {
      const words = wordsOf(w.message(c.card));
      return (
        words.includes('The plan changed') &&
        buttonsOf(w.message(c.card).blocks).some((b) => b.value === next)
      );
    });
    const words = wordsOf(w.message(c.card));
    expect(words).toContain('- deployment/web: 3 -&gt; 5 replicas');
    expect(words).toContain('+ deployment/web: 4 -&gt; 5 replicas');
    expect(ranLines()).toEqual([]);
    expect((await w.store.runs.loadRun(c.asked.runId))?.state.status).toBe('awaiting_approval');

    expect((await w.click(w.message(c.card), PEOPLE.manager, ACTION_IDS.approve)).status).toBe(200);
    const run = await w.ended(c.asked.runId);
    expect(run.state.status).toBe('completed');
    expect(ranLines()).toEqual(['scaled']);
    expect(await w.store.ledger.get(next)).toMatchObject({ status: 'succeeded' });
    expect(await w.store.ledger.get(c.card.approvalId)).toMatchObject({ status: 'plan_blocked' });
  });

  it('an unchanged plan runs at the first approval', async () => {
    writeFileSync(worldFile, 'deployment/web: 3 -> 5 replicas\n');
    rmSync(ranFile, { force: true });
    const c = await askToScale('unchanged');
    await w.click(w.message(c.card), PEOPLE.manager, ACTION_IDS.approve);
    const run = await w.ended(c.asked.runId);
    expect(run.state.status).toBe('completed');
    expect(ranLines()).toEqual(['scaled']);
    const entry = await w.store.ledger.get(c.card.approvalId);
    expect(entry?.status).toBe('succeeded');
    expect(entry?.approvedPlanHash).toMatch(/^[0-9a-f]{64}$/);
    expect(entry?.currentPlanHash).toBe(entry?.approvedPlanHash);
  });

  it('a plan that fails before execution blocks it: nothing runs, the card says why, the model is told', async () => {
    writeFileSync(worldFile, 'deployment/web: 3 -> 5 replicas\n');
    rmSync(ranFile, { force: true });
    const c = await askToScale('failing');
    rmSync(worldFile);
    await w.click(w.message(c.card), PEOPLE.manager, ACTION_IDS.approve);
    const run = await w.ended(c.asked.runId);
    expect(run.state.status).toBe('completed');
    expect(ranLines()).toEqual([]);
    await w.waitFor('the card saying why', () =>
      wordsOf(w.message(c.card)).includes('could not be computed'),
    );
    const tool = run.state.messages.find((m) => m.role === 'tool');
    expect(JSON.parse(String(tool?.content)).error.code).toBe('plan_failed');
  });
});
