/**
 * On-call approvers end to end with loopgate's real processes (`npm run bot` and `npm run worker`), real
 * Redis, the fake Slack (users.lookupByEmail), a fake PagerDuty REST API and signed clicks: a card decided
 * by the on-call of the moment; a handoff while the card waits (the old on-call refused with an ephemeral
 * naming the new one, the card redrawn, the new one accepted); the provider down (the rule's fallback
 * decides, and the card says so); an escalation to the next level of the escalation policy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escalateJobId, oncallWatchJobId } from '../../src/queue/job-ids.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { type FakePagerDutyRest, startFakePagerDutyRest } from '../fakes/pagerduty-rest-server.js';
import { callThenAnswer, succeeded } from './support/model-brains.js';
import { wordsOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

const ONCALL1 = 'U0ONCALL1';
const ONCALL2 = 'U0ONCALL2';
const LEVEL2 = 'U0LEVEL2';
const email = (id: string) => `${id.toLowerCase()}@example.com`;
const row = (id: string, schedule = 'P1ABC') => ({
  email: email(id),
  escalationPolicy: 'P2DEF',
  level: 1,
  schedule,
});

let w: SlackWorld;
let pd: FakePagerDutyRest;
beforeAll(async () => {
  pd = await startFakePagerDutyRest('pd-e2e-token');
  w = await startSlackWorld({
    mode: 'split',
    workers: 1,
    slackUsers: Object.fromEntries([ONCALL1, ONCALL2, LEVEL2].map((id) => [id, { email: email(id) }])),
    env: { PAGERDUTY_API_URL: pd.url, PAGERDUTY_API_TOKEN: 'pd-e2e-token' },
    policyExtra: [
      'rules:',
      '  http_request:',
      '    - name: on-call deploys',
      '      when: { url: { glob: "*/deploy/oncall-*" } }',
      '      outcome: ask',
      `      approvers: [{ oncall: { pagerduty: { schedule: P1ABC }, fallback: [${PEOPLE.manager}] } }]`,
      `      escalateTo: [{ oncall: { pagerduty: { escalationPolicy: P2DEF, level: 2 }, fallback: [${PEOPLE.manager}] } }]`,
      '      escalateAfterMinutes: 10',
      '    - name: deploys of a schedule PagerDuty cannot answer for',
      '      when: { url: { glob: "*/deploy/down-*" } }',
      '      outcome: ask',
      `      approvers: [{ oncall: { pagerduty: { schedule: P9DOWN }, fallback: [${PEOPLE.manager}] } }]`,
    ],
  });
}, 120_000);
afterAll(async () => {
  await w?.close();
  await pd?.close();
}, 60_000);

/** Asks for a POST to `/deploy/<name>` under brain `tag`; resolves with the card once posted. */
async function askToPost(tag: string, name: string) {
  const url = w.deployUrl(name);
  w.model.brain(
    tag,
    callThenAnswer('http_request', { method: 'POST', url, body: { n: 1 } }, (r) =>
      succeeded(r) ? 'Deployed.' : 'Not deployed.',
    ),
  );
  const asked = await w.ask(w.newChannel(), PEOPLE.requester, w.model.tagged(tag, `please post to ${name}`));
  return { url, asked, card: await w.card(asked) };
}

/** The cache period of a source ends now (as after `approvals.oncallCacheSeconds`). */
const expireCache = (key: string) =>
  w.store.context.redis.del(`${w.store.context.keys.prefix}:oncall:${key}`);

describe('on-call approvers end to end', { timeout: 90_000 }, () => {
  it('the on-call of the moment decides; someone else is refused with who is on call now', async () => {
    pd.setOncalls([row(ONCALL1), row(LEVEL2, 'P5LVL2')]);
    const { url, asked, card } = await askToPost('now', 'oncall-now');
    expect(wordsOf(w.message(card))).toContain(`<@${ONCALL1}> (on call now: PagerDuty schedule P1ABC)`);
    await w.click(w.message(card), PEOPLE.stranger, ACTION_IDS.approve);
    const [refusal] = await w.waitFor('the refusal', () => {
      const list = w.ephemeralsTo(PEOPLE.stranger, asked.channel);
      return list.length > 0 ? list : null;
    });
    expect(refusal?.text).toBe(
      `You may not approve \`http_request\` calls. They can be decided by <@${ONCALL1}> (on call now: PagerDuty schedule P1ABC). Nothing was changed.`,
    );
    await w.click(w.message(card), ONCALL1, ACTION_IDS.approve);
    const run = await w.ended(asked.runId);
    expect(run.state.actions.map((a) => [a.outcome, a.decidedBy])).toEqual([['succeeded', ONCALL1]]);
    expect(w.hits(url)).toHaveLength(1);
  });

  it('after a handoff while the card waits, the old on-call is refused, the card is updated, the new one decides', async () => {
    pd.setOncalls([row(ONCALL1)]);
    await expireCache('pagerduty:schedule:P1ABC');
    const { url, asked, card } = await askToPost('handoff', 'oncall-handoff');
    expect(wordsOf(w.message(card))).toContain(`<@${ONCALL1}> (on call now`);
    pd.setOncalls([row(ONCALL2)]);
    await expireCache('pagerduty:schedule:P1ABC');
    await w.click(w.message(card), ONCALL1, ACTION_IDS.approve);
    const [refusal] = await w.waitFor('the refusal', () => {
      const list = w.ephemeralsTo(ONCALL1, asked.channel);
      return list.length > 0 ? list : null;
    });
    expect(refusal?.text).toContain(
      `They can be decided by <@${ONCALL2}> (on call now: PagerDuty schedule P1ABC)`,
    );
    await w.waitFor('the card to name the new on-call', () =>
      wordsOf(w.message(card)).includes(`<@${ONCALL2}> (on call now`),
    );
    expect(wordsOf(w.message(card))).not.toContain(`<@${ONCALL1}>`);
    await w.click(w.message(card), ONCALL2, ACTION_IDS.approve);
    const run = await w.ended(asked.runId);
    expect(run.state.actions.map((a) => [a.outcome, a.decidedBy])).toEqual([['succeeded', ONCALL2]]);
    expect(w.hits(url)).toHaveLength(1);
  });

  it('a handoff while the card waits and nobody clicks: the on-call watch redraws the card, once per change', async () => {
    pd.setOncalls([row(ONCALL1)]);
    await expireCache('pagerduty:schedule:P1ABC');
    const { url, asked, card } = await askToPost('watch', 'oncall-watch');
    expect(wordsOf(w.message(card))).toContain(`<@${ONCALL1}> (on call now`);
    const look = async (tick: number) => {
      const job = await w.waitFor(`on-call watch ${tick}`, () =>
        w.queue.getJob(oncallWatchJobId(card.approvalId, tick)),
      );
      await job.promote();
      await w.waitFor(`on-call watch ${tick} done`, async () => ((await job.isCompleted()) ? true : null));
    };
    // First look: nothing changed; the card is drawn again as it was.
    await look(1);
    const updates = () => w.message(card).history.length;
    const afterFirst = updates();
    expect(wordsOf(w.message(card))).toContain(`<@${ONCALL1}> (on call now`);
    // Unchanged on-call: no redraw.
    await look(2);
    expect(updates()).toBe(afterFirst);
    // Handoff: the next look names the new on-call, with no click in between.
    pd.setOncalls([row(ONCALL2)]);
    await expireCache('pagerduty:schedule:P1ABC');
    await look(3);
    expect(updates()).toBe(afterFirst + 1);
    expect(wordsOf(w.message(card))).toContain(`<@${ONCALL2}> (on call now: PagerDuty schedule P1ABC)`);
    expect(wordsOf(w.message(card))).not.toContain(`<@${ONCALL1}>`);
    await w.click(w.message(card), ONCALL2, ACTION_IDS.approve);
    const run = await w.ended(asked.runId);
    expect(run.state.actions.map((a) => [a.outcome, a.decidedBy])).toEqual([['succeeded', ONCALL2]]);
    expect(w.hits(url)).toHaveLength(1);
    // A decided card is not watched any more: the pending look ends without scheduling another.
    await look(4);
    expect(await w.queue.getJob(oncallWatchJobId(card.approvalId, 5))).toBeUndefined();
  });

  it('with PagerDuty down, the fallback decides and the card says so; the on-call cannot', async () => {
    // One answer is enough: it is cached for bot and worker alike (a later one names nobody: still the fallback).
    pd.failNext(1, 503);
    const { url, asked, card } = await askToPost('down', 'down-a');
    expect(wordsOf(w.message(card))).toContain(
      `<@${PEOPLE.manager}> (fallback: PagerDuty schedule P9DOWN cannot say who is on call: PagerDuty answered HTTP 503)`,
    );
    expect(wordsOf(w.message(card)).toLowerCase()).not.toContain('anyone');
    await w.click(w.message(card), ONCALL1, ACTION_IDS.approve);
    const [refusal] = await w.waitFor('the refusal', () => {
      const list = w.ephemeralsTo(ONCALL1, asked.channel);
      return list.length > 0 ? list : null;
    });
    expect(refusal?.text).toContain(
      `They can be decided by <@${PEOPLE.manager}> (fallback: PagerDuty schedule P9DOWN`,
    );
    await w.click(w.message(card), PEOPLE.manager, ACTION_IDS.approve);
    const run = await w.ended(asked.runId);
    expect(run.state.actions.map((a) => [a.outcome, a.decidedBy])).toEqual([['succeeded', PEOPLE.manager]]);
    expect(w.hits(url)).toHaveLength(1);
  });

  it('an unanswered card escalates to the next level, where PagerDuty would page', async () => {
    pd.setOncalls([row(ONCALL1), { email: email(LEVEL2), escalationPolicy: 'P2DEF', level: 2 }]);
    await expireCache('pagerduty:schedule:P1ABC');
    const { url, asked, card } = await askToPost('escalate', 'oncall-escalate');
    const job = await w.waitFor('the escalation timer', () => w.queue.getJob(escalateJobId(card.approvalId)));
    await job.promote();
    const note = await w.waitFor('the escalation note', () =>
      w.slack.thread(asked.channel, asked.threadTs).find((m) => wordsOf(m).includes('Escalated')),
    );
    expect(wordsOf(note)).toContain(`<@${LEVEL2}> (on call now: PagerDuty escalation policy P2DEF level 2)`);
    await w.waitFor('the level-2 on-call on the card', () =>
      wordsOf(w.message(card)).includes(`<@${LEVEL2}>`),
    );
    await w.click(w.message(card), LEVEL2, ACTION_IDS.approve);
    const run = await w.ended(asked.runId);
    expect(run.state.actions.map((a) => [a.outcome, a.decidedBy])).toEqual([['succeeded', LEVEL2]]);
    expect(w.hits(url)).toHaveLength(1);
  });
});
