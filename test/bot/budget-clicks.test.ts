/**
 * Continue / Stop on a budget card through the real bot (docs/approvals.md, "More budget"): who may
 * answer is judged at the click. Steps, time and tokens are the requester's to grant; cost is
 * `budgets.extend.approvers`' (a user group counts through its members), never the requester's; the
 * requester may always Stop. A refused click gets an ephemeral naming who may answer, and changes nothing.
 */
import { webApi } from '@slack/bolt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BudgetAsk } from '../../src/loop/budget-asks.js';
import { budgetButtonValue, budgetCard, budgetCardView } from '../../src/slack/budget-card.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import {
  type BotFixture,
  CHANNEL,
  GROUP,
  GROUPIE,
  MANAGER,
  REQUESTER,
  startBotFixture,
} from './bot-fixture.js';

const CFO = 'U0CFO';
const POLICY = `
approvals:
  approvers: [${MANAGER}]
  selfApproval: false
model:
  defaultPrice: { input_per_mtok: 1, output_per_mtok: 4 }
budgets:
  maxSteps: 5
  maxCostUsd: 0.5
  extend: { steps: 5, costUsd: 1, times: 2, approvers: [${CFO}, ${GROUP}] }
`;

let fx: BotFixture;
let slack: InstanceType<typeof webApi.WebClient>;
beforeAll(async () => {
  fx = await startBotFixture({ policyYaml: POLICY });
  slack = new webApi.WebClient(fx.fake.token, {
    slackApiUrl: fx.fake.apiUrl,
    logLevel: webApi.LogLevel.ERROR,
  });
});
afterAll(async () => {
  await fx.cleanup();
});

/** A run of REQUESTER paused at `reason` with its budget card posted in its thread. */
async function askedFor(reason: BudgetAsk['reason']) {
  const { runId, threadTs } = await fx.pendingApproval();
  const now = Date.now();
  const ask: BudgetAsk = {
    round: 1,
    reason,
    message: 'The run used up its budget.',
    offer: reason === 'cost_budget' ? { costUsd: 1 } : { steps: 5 },
    at: now,
  };
  const record = await fx.store.budgetAsks.create(runId, ask, REQUESTER, now + 30 * 60_000);
  if (!record) throw new Error('budget ask not created');
  const posted = await slack.chat.postMessage({
    channel: CHANNEL,
    thread_ts: threadTs,
    ...budgetCard(budgetCardView(record, [])),
  });
  const cardTs = String(posted.ts);
  await fx.store.budgetAsks.setCard(runId, 1, { channel: CHANNEL, ts: cardTs });
  return { runId, threadTs, cardTs };
}

async function click(
  card: { runId: string; threadTs: string; cardTs: string },
  user: string,
  actionId: string,
): Promise<void> {
  const res = await fx.click({
    user,
    channel: CHANNEL,
    messageTs: card.cardTs,
    threadTs: card.threadTs,
    action: { actionId, value: budgetButtonValue(card.runId, 1) },
  });
  expect(res.status).toBe(200);
  await fx.bot.idle();
}

const statusOf = async (runId: string) => (await fx.store.budgetAsks.get(runId))?.status;
const resumes = async (runId: string) =>
  (await fx.jobs()).filter((j) => j.name === 'budget_resume' && j.data.runId === runId).length;
const notesTo = (user: string) =>
  fx.fake
    .ephemerals(CHANNEL)
    .filter((e) => e.user === user)
    .map((e) => e.text);

describe('who may answer an ask for more budget (real bot)', () => {
  it('cost: the requester may not Continue; a budget approver may, once', async () => {
    const card = await askedFor('cost_budget');
    const before = notesTo(REQUESTER).length;
    await click(card, REQUESTER, ACTION_IDS.budgetContinue);
    expect(await statusOf(card.runId)).toBe('pending');
    expect(await resumes(card.runId)).toBe(0);
    const note = notesTo(REQUESTER).slice(before);
    expect(note).toHaveLength(1);
    expect(note[0]).toContain('You may not answer this ask for more budget');
    expect(note[0]).toContain(`<@${CFO}>`);

    // The tool approvers are not the budget's approvers for cost.
    await click(card, MANAGER, ACTION_IDS.budgetContinue);
    expect(await statusOf(card.runId)).toBe('pending');

    await click(card, CFO, ACTION_IDS.budgetContinue);
    expect(await fx.store.budgetAsks.get(card.runId)).toMatchObject({ status: 'granted', decidedBy: CFO });
    expect(await resumes(card.runId)).toBe(1);
  });

  it('cost: a member of the budget approvers’ user group may Continue', async () => {
    const card = await askedFor('cost_budget');
    await click(card, GROUPIE, ACTION_IDS.budgetContinue);
    expect(await fx.store.budgetAsks.get(card.runId)).toMatchObject({
      status: 'granted',
      decidedBy: GROUPIE,
    });
    expect(await resumes(card.runId)).toBe(1);
  });

  it('cost: the requester may still Stop their own run', async () => {
    const card = await askedFor('cost_budget');
    await click(card, REQUESTER, ACTION_IDS.budgetStop);
    expect(await fx.store.budgetAsks.get(card.runId)).toMatchObject({
      status: 'refused',
      decidedBy: REQUESTER,
    });
    expect(await resumes(card.runId)).toBe(1);
  });

  it('steps: the requester grants; the cost approvers may not', async () => {
    const card = await askedFor('max_steps');
    const before = notesTo(CFO).length;
    await click(card, CFO, ACTION_IDS.budgetContinue);
    expect(await statusOf(card.runId)).toBe('pending');
    expect(notesTo(CFO).slice(before)[0]).toContain(`<@${REQUESTER}>`);
    await click(card, REQUESTER, ACTION_IDS.budgetContinue);
    expect(await fx.store.budgetAsks.get(card.runId)).toMatchObject({
      status: 'granted',
      decidedBy: REQUESTER,
    });
    expect(await resumes(card.runId)).toBe(1);
  });
});
