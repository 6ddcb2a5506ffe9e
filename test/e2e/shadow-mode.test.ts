/**
 * Shadow mode end to end with loopgate's real processes (`npm run bot` and `npm run worker`), real Redis,
 * the fake Slack and OpenAI, and signed clicks: with `approvals.mode: shadow` a write is never sent; its
 * card says "Shadow: this will not run" with Would approve / Would reject; the model is told at once that
 * it was not executed and the run ends without waiting for anyone; a Would approve click is recorded
 * with who and when and the card redrawn; the ledger has no entry for the call, and nothing runs after
 * the click either.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHADOW_HEADER } from '../../src/slack/approval-card.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { callThenAnswer } from './support/model-brains.js';
import { buttonsOf, wordsOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

let w: SlackWorld;
beforeAll(async () => {
  w = await startSlackWorld({ mode: 'split', workers: 1, approvalsExtra: ['  mode: shadow'] });
}, 120_000);
afterAll(async () => {
  await w?.close();
}, 60_000);

const TOLD = 'The deploy was not executed: loopgate is in shadow mode.';

describe('shadow mode end to end', { timeout: 90_000 }, () => {
  it('a shadow card, the model told, the run done without waiting, Would approve recorded, no ledger entry, nothing sent', async () => {
    const url = w.deployUrl('shadow-payments');
    w.model.brain(
      'shadow',
      callThenAnswer('http_request', { method: 'POST', url, body: { n: 1 } }, (result) =>
        result.includes('shadow_mode') ? TOLD : 'The deploy went through.',
      ),
    );
    const channel = w.newChannel();
    const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged('shadow', 'please deploy payments'));
    // Nobody clicks anything: the run ends on its own.
    const run = await w.ended(asked.runId);
    expect(run.state.status).toBe('completed');
    expect(run.state.answer?.join('')).toBe(TOLD);
    const toolMessage = run.state.messages.find((m) => m.role === 'tool');
    expect(JSON.parse(toolMessage?.content ?? '{}')).toMatchObject({
      ok: false,
      error: { code: 'shadow_mode' },
    });
    expect(w.hits(url)).toEqual([]);

    const card = w.slack
      .thread(channel, asked.threadTs)
      .find((m) => buttonsOf(m.blocks).some((b) => b.actionId === ACTION_IDS.wouldApprove));
    expect(card).toBeDefined();
    expect(wordsOf(card!)).toContain(SHADOW_HEADER);
    expect(buttonsOf(card!.blocks).map((b) => b.actionId)).not.toContain(ACTION_IDS.approve);
    const approvalId = buttonsOf(card!.blocks).find((b) => b.actionId === ACTION_IDS.wouldApprove)!.value;
    expect(await w.store.approvals.get(approvalId)).toMatchObject({ via: 'shadow', status: 'rejected' });
    expect(await w.store.ledger.get(approvalId)).toBeNull();

    // A stranger may not answer; the manager's Would approve is recorded and the card redrawn.
    expect((await w.click(card!, PEOPLE.stranger, ACTION_IDS.wouldApprove)).status).toBe(200);
    await w.waitFor('the stranger told', () =>
      w.ephemeralsTo(PEOPLE.stranger, channel).find((e) => e.text.includes('You may not approve')),
    );
    expect(
      (
        await w.click(
          w.slack.thread(channel, asked.threadTs).find((m) => m.ts === card!.ts)!,
          PEOPLE.manager,
          ACTION_IDS.wouldApprove,
        )
      ).status,
    ).toBe(200);
    const decided = await w.waitFor(
      'the shadow decision',
      async () => (await w.store.approvals.get(approvalId))?.shadowDecision,
    );
    expect(decided).toMatchObject({ decision: 'would_approve', by: PEOPLE.manager });
    await w.waitFor('the card redrawn', () => {
      const now = w.slack.thread(channel, asked.threadTs).find((m) => m.ts === card!.ts);
      return now && wordsOf(now).includes(`<@${PEOPLE.manager}> *would have approved*`);
    });
    const audit = (await w.store.audit.recent(50))
      .map((a) => a.entry)
      .filter((e) => e.approvalId === approvalId);
    expect(audit.map((e) => e.event).sort()).toEqual(['shadow', 'shadow_decision']);
    // Nothing was queued for it, so nothing runs later either.
    expect((await w.queue.getJobs(['waiting', 'delayed', 'active'])).map((j) => j.data)).not.toContainEqual(
      expect.objectContaining({ approvalId }),
    );
    expect(await w.store.ledger.get(approvalId)).toBeNull();
    expect(w.hits(url)).toEqual([]);
  });
});
