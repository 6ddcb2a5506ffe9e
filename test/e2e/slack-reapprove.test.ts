/**
 * End to end with real processes (`npm run bot` and two `npm run worker`), the fake Slack and the fake
 * OpenAI: an approved write whose worker is SIGKILLed while the request is in flight. The other worker
 * reports the outcome as unknown (it does not send the write again), the card offers "Approve again", a
 * permitted click sends it once more, and the thread is told how it went.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { askToDeploy, NOT_DEPLOYED, postedWith, toolResultsSeen } from './support/deploy-case.js';
import { buttonsOf, wordsOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

let w: SlackWorld;
beforeAll(async () => {
  w = await startSlackWorld({ mode: 'split', workers: 2 });
}, 120_000);
afterAll(async () => {
  await w?.close();
}, 60_000);

/**
 * The worker process holding the run's lease, from the holder id (`<host>-<pid>-<id>/<job>`). Polled: on a
 * loaded machine a renewal can come late and leave the lease unheld for a moment.
 */
function workerHolding(runId: string) {
  return w.waitFor(`the worker holding run ${runId}`, async () => {
    const holder = await w.store.context.redis.hget(w.store.context.keys.run(runId).lease, 'holder');
    const pid = Number(/-(\d+)-[0-9a-f]{8}\//.exec(holder ?? '')?.[1]);
    return w.processes.find((p) => p.entry === 'worker' && p.logs().some((l) => l.pid === pid));
  });
}

describe('Approve again after a worker died mid-write (real bot and workers)', { timeout: 90_000 }, () => {
  it('reports the unknown outcome, runs nothing twice by itself, and runs it once more on a permitted click', async () => {
    const c = await askToDeploy(w, 'hang-first-reapprove');
    await w.click(w.message(c.card), PEOPLE.manager, ACTION_IDS.approve);
    await w.waitFor('the write to be in flight', () => w.hits(c.url).length === 1);
    (await workerHolding(c.asked.runId)).kill('SIGKILL');

    // The surviving worker recovers the job: the write was started, so its outcome is unknown.
    await w.waitFor(
      'the card to offer Approve again',
      () => buttonsOf(w.message(c.card).blocks).some((b) => b.actionId === ACTION_IDS.reapprove),
      45_000,
    );
    const run = await w.ended(c.asked.runId, 30_000);
    expect(run.state.actions.map((a) => a.outcome)).toEqual(['outcome_unknown']);
    expect(JSON.parse(toolResultsSeen(w, c.tag)[0] ?? '{}')).toMatchObject({
      ok: false,
      error: { code: 'outcome_unknown' },
    });
    expect(postedWith(w, c, NOT_DEPLOYED)).toHaveLength(1);
    expect(wordsOf(w.message(c.card))).toContain('Outcome unknown');
    expect(w.hits(c.url)).toHaveLength(1);

    // Only someone who may approve it can ask for it again (the requester is no approver here).
    await w.click(w.message(c.card), PEOPLE.stranger, ACTION_IDS.reapprove);
    await w.click(w.message(c.card), PEOPLE.requester, ACTION_IDS.reapprove);
    await w.waitFor('both refusals', () => w.slack.ephemerals(c.channel).length >= 2);
    expect(w.ephemeralsTo(PEOPLE.stranger, c.channel)[0]?.text).toContain('You may not approve');
    expect(w.ephemeralsTo(PEOPLE.requester, c.channel)[0]?.text).toContain('You may not approve');

    await w.click(w.message(c.card), PEOPLE.sreB, ACTION_IDS.reapprove);
    const told = await w.waitFor('the thread to hear how it went', () => {
      const found = postedWith(w, c, 'Ran `http_request` again');
      return found.length > 0 ? found : null;
    });
    expect(wordsOf(told[0]!)).toContain(`approved again by <@${PEOPLE.sreB}>: it succeeded`);
    expect(w.hits(c.url)).toHaveLength(2);
    const card = w.message(c.card);
    expect(wordsOf(card)).toContain(`*Approved* by <@${PEOPLE.sreB}>`);
    expect(wordsOf(card)).toContain('approved again after an unknown outcome');
    expect(wordsOf(card)).toContain('Ran again: succeeded.');
    expect(buttonsOf(card.blocks).map((b) => b.actionId)).toEqual([ACTION_IDS.details]);
    const memory = await w.store.threads.history({
      teamId: w.id.teamId,
      channelId: c.channel,
      threadTs: c.asked.threadTs,
    });
    expect(memory.map((t) => t.content)).toContainEqual(
      expect.stringContaining('http_request was run again after an unknown outcome'),
    );
  });
});
