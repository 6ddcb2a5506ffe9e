/**
 * End to end, with loopgate's real processes (`npm run bot` and one `npm run worker`) against real Redis,
 * the fake Slack Web API and the fake OpenAI: more budget as a decision (budgets.extend). A run that uses
 * up its steps pauses with a Continue / Stop card instead of stopping; a grant by the requester adds the
 * steps once (a double click or a stranger changes nothing), the cap allows no second ask, and an ask
 * nobody answers expires (its delayed job promoted) and ends the run with its stop reason.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgetJobId } from '../../src/queue/job-ids.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import type { StoredMessage } from '../fakes/slack-api-server.js';
import type { Brain } from './support/model-brains.js';
import { buttonOf, buttonsOf, wordsOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

const STEPS = 2;
const MORE = 2;

let w: SlackWorld;
beforeAll(async () => {
  w = await startSlackWorld({
    mode: 'split',
    workers: 1,
    policyExtra: [
      'budgets:',
      `  maxSteps: ${STEPS}`,
      `  extend: { steps: ${MORE}, times: 1, expiresAfterMinutes: 30 }`,
    ],
  });
}, 120_000);
afterAll(async () => {
  await w?.close();
}, 60_000);

/** Reads one more status page per step (a new URL each time, so no loop brake trips) and never answers. */
const keepsReading =
  (tag: string): Brain =>
  ({ toolResults }) => ({
    toolCalls: [
      { name: 'http_get', arguments: JSON.stringify({ url: w.statusUrl(`${tag}-${toolResults.length}`) }) },
    ],
  });

/** Messages of a thread carrying the budget card's buttons (now or in an earlier version). */
const budgetCardsIn = (channel: string, threadTs: string): StoredMessage[] =>
  w.slack
    .thread(channel, threadTs)
    .filter((m) =>
      [m.blocks, ...m.history.map((h) => h.blocks)].some((blocks) =>
        buttonsOf(blocks).some((b) => b.actionId === ACTION_IDS.budgetContinue),
      ),
    );

/** Asks in a fresh channel and waits for the budget card, posted and recorded on its ask. */
async function askUntilBudgetCard(tag: string) {
  const channel = w.newChannel();
  w.model.brain(tag, keepsReading(tag));
  const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged(tag, 'check every status page'));
  const card = await w.waitFor('the budget card', async () => {
    const record = await w.store.budgetAsks.get(asked.runId);
    const posted = budgetCardsIn(channel, asked.threadTs)[0];
    return record?.cardTs && posted?.ts === record.cardTs ? posted : undefined;
  });
  return { channel, asked, card };
}

const notesTo = (user: string, channel: string, count: number) =>
  w.waitFor(`${count} ephemeral note(s) to ${user}`, () => {
    const notes = w.ephemeralsTo(user, channel);
    return notes.length >= count ? notes.map((n) => n.text) : undefined;
  });

/** The card as first posted, with its buttons (a client that has not refreshed still shows it). */
const asFirstPosted = (card: StoredMessage): StoredMessage => ({
  ...card,
  blocks: card.history[0]?.blocks ?? card.blocks,
});

const fresh = (card: StoredMessage) => {
  const found = w.slack.message(card.channel, card.ts);
  if (!found) throw new Error('the budget card is gone');
  return found;
};

describe('more budget as a decision (real bot and worker processes)', { timeout: 90_000 }, () => {
  it('asks at the step budget, grants once within the cap, refuses a stranger and a double click, and does not ask beyond the cap', async () => {
    const { channel, asked, card } = await askUntilBudgetCard('grant');
    const paused = await w.store.runs.loadRun(asked.runId);
    expect(paused?.state.status).toBe('awaiting_approval');
    expect(paused?.state.budgetAsk).toMatchObject({ round: 1, reason: 'max_steps', offer: { steps: MORE } });
    expect(w.model.requestsOf('grant')).toHaveLength(STEPS);
    expect(wordsOf(card)).toContain(`Continue with ${MORE} more steps?`);
    expect(buttonsOf(card.blocks).map((b) => [b.actionId, b.value])).toEqual([
      [ACTION_IDS.budgetContinue, `${asked.runId}/1`],
      [ACTION_IDS.budgetStop, `${asked.runId}/1`],
    ]);

    // Only the requester may grant more steps: a stranger is told so and nothing changes.
    await w.click(card, PEOPLE.stranger, ACTION_IDS.budgetContinue);
    expect((await notesTo(PEOPLE.stranger, channel, 1))[0]).toContain('You may not answer');
    expect((await w.store.budgetAsks.get(asked.runId))?.status).toBe('pending');

    // Two clicks on the card as first shown: the first grants, the second changes nothing.
    const shown = asFirstPosted(card);
    await w.click(shown, PEOPLE.requester, ACTION_IDS.budgetContinue);
    await w.click(shown, PEOPLE.requester, ACTION_IDS.budgetContinue);
    const run = await w.ended(asked.runId);
    expect((await notesTo(PEOPLE.requester, channel, 1))[0]).toContain('already granted');

    // The grant added exactly its steps once; at the cap the run stopped without asking again.
    expect(run.state.status).toBe('stopped');
    expect(run.state.stopReason).toBe('max_steps');
    expect(run.state.step).toBe(STEPS + MORE);
    expect(run.state.extensions).toEqual([
      { round: 1, reason: 'max_steps', added: { steps: MORE }, by: PEOPLE.requester, at: expect.any(Number) },
    ]);
    expect(w.model.requestsOf('grant')).toHaveLength(STEPS + MORE);
    expect(budgetCardsIn(channel, asked.threadTs)).toHaveLength(1);
    const answered = fresh(card);
    expect(wordsOf(answered)).toContain(`*Continued* by <@${PEOPLE.requester}>`);
    expect(buttonOf(answered, ACTION_IDS.budgetContinue)).toBeUndefined();
    // Audited once, as granted by the requester.
    const audited = (await w.store.audit.recent(50)).filter(
      (e) => e.entry.runId === asked.runId && e.entry.event === 'budget_extension',
    );
    expect(audited.map((e) => [e.entry.decision, e.entry.decider, e.entry.tool])).toEqual([
      ['approved', PEOPLE.requester, 'budget:max_steps'],
    ]);
  });

  it('Stop ends the run with its stop reason', async () => {
    const { asked, card } = await askUntilBudgetCard('stop');
    await w.click(card, PEOPLE.requester, ACTION_IDS.budgetStop);
    const run = await w.ended(asked.runId);
    expect(run.state.stopReason).toBe('max_steps');
    expect(run.state.stopMessage).toContain(`More budget was refused by <@${PEOPLE.requester}>`);
    expect(run.state.extensions ?? []).toEqual([]);
    expect(w.model.requestsOf('stop')).toHaveLength(STEPS);
    expect(wordsOf(fresh(card))).toContain(`*Stopped* by <@${PEOPLE.requester}>`);
  });

  it('expiry: nobody answers, the run ends with its stop reason, a late click changes nothing', async () => {
    const { channel, asked, card } = await askUntilBudgetCard('expiry');
    const timer = await w.queue.getJob(budgetJobId('expire', asked.runId, 1));
    expect(await timer?.getState()).toBe('delayed');
    // The policy's 30 minutes; run the timer now, through the same job the worker would run then.
    expect(timer?.delay).toBeGreaterThan(29 * 60_000);
    await timer?.promote();
    const run = await w.ended(asked.runId);

    expect(run.state.status).toBe('stopped');
    expect(run.state.stopReason).toBe('max_steps');
    expect(run.state.stopMessage).toContain('Nobody granted more budget in time');
    expect(w.model.requestsOf('expiry')).toHaveLength(STEPS);
    expect((await w.store.budgetAsks.get(asked.runId))?.status).toBe('expired');
    await w.waitFor('the card to say it expired', () => wordsOf(fresh(card)).includes('*Expired*'));

    await w.click(asFirstPosted(card), PEOPLE.requester, ACTION_IDS.budgetContinue);
    expect((await notesTo(PEOPLE.requester, channel, 1))[0]).toContain('expired');
    expect(w.model.requestsOf('expiry')).toHaveLength(STEPS);
  });

  it('a cancel while the run asks closes the ask and its card', async () => {
    const { channel, asked, card } = await askUntilBudgetCard('cancel');
    const cancelling = await w.slash(channel, PEOPLE.requester, `cancel ${asked.runId}`);
    expect(cancelling.text).toContain(`Cancelling run \`${asked.runId}\``);
    const run = await w.ended(asked.runId);
    expect(run.state).toMatchObject({ status: 'cancelled', stopReason: 'cancelled' });
    expect(run.state.budgetAsk ?? null).toBeNull();
    expect(run.state.extensions ?? []).toEqual([]);
    expect((await w.store.budgetAsks.get(asked.runId))?.status).toBe('cancelled');
    await w.waitFor('the card to say it was cancelled', () => wordsOf(fresh(card)).includes('*Cancelled*'));
    expect(buttonOf(fresh(card), ACTION_IDS.budgetContinue)).toBeUndefined();
    expect(w.model.requestsOf('cancel')).toHaveLength(STEPS);
  });
});
