/**
 * Change freezes end to end with loopgate's real processes (`npm run bot` and a `npm run worker`), real
 * Redis, the fake Slack and OpenAI, and signed clicks. A freeze in force now (a window around the test's
 * start, in a time zone other than UTC) denies prod deploys: nothing runs and the model reads the reason.
 * The same freeze asks two approvers for database deploys, where one approver alone would do otherwise.
 * A freeze whose window is over denies nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { toolResultsSeen } from './support/deploy-case.js';
import { callThenAnswer, succeeded } from './support/model-brains.js';
import { wordsOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

const ZONE = 'Asia/Tokyo';

/** The wall time in ZONE of `ms` as the policy writes it ("2026-12-05 21:40"). */
function tokyo(ms: number): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: ZONE,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
    })
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}`;
}

const DAY = 86_400_000;
const started = Date.now();

let w: SlackWorld;
beforeAll(async () => {
  w = await startSlackWorld({
    mode: 'split',
    workers: 1,
    policyExtra: [
      'freezes:',
      '  release:',
      `    timeZone: ${ZONE}`,
      `    windows: [{ start: "${tokyo(started - DAY)}", end: "${tokyo(started + DAY)}" }]`,
      '  last-year:',
      `    windows: [{ start: "${tokyo(started - 400 * DAY)}", end: "${tokyo(started - 300 * DAY)}" }]`,
      'rules:',
      '  http_request:',
      '    - name: last year',
      '      when: { freeze: last-year }',
      '      outcome: deny',
      '      reason: the old freeze',
      '    - name: no prod in the release freeze',
      '      when: { freeze: release, url: { glob: "*/deploy/prod-*" } }',
      '      outcome: deny',
      '      reason: prod is frozen for the release',
      '    - name: two for databases in a freeze',
      '      when: { freeze: true, url: { glob: "*/deploy/db-*" } }',
      '      outcome: ask',
      `      approvers: [${PEOPLE.manager}, ${PEOPLE.sreGroup}]`,
      '      quorum: 2',
    ],
  });
}, 120_000);
afterAll(async () => {
  await w?.close();
}, 60_000);

const DONE = 'The deploy went through.';
const NOT_DONE = 'The deploy did not happen.';

async function askToPost(tag: string, name: string) {
  const url = w.deployUrl(name);
  w.model.brain(
    tag,
    callThenAnswer('http_request', { method: 'POST', url, body: { n: 1 } }, (r) =>
      succeeded(r) ? DONE : NOT_DONE,
    ),
  );
  const asked = await w.ask(w.newChannel(), PEOPLE.requester, w.model.tagged(tag, `please post to ${name}`));
  return { url, asked };
}

describe('change freezes end to end', { timeout: 90_000 }, () => {
  it('a freeze in force denies a prod deploy: nothing runs, no card, the model reads the reason', async () => {
    const { url, asked } = await askToPost('frozen', 'prod-payments');
    const run = await w.ended(asked.runId);
    expect(w.hits(url)).toEqual([]);
    const [result] = toolResultsSeen(w, 'frozen');
    expect(result).toContain('prod is frozen for the release');
    expect(result).not.toContain('the old freeze');
    expect(run.state.actions.map((a) => a.outcome)).not.toContain('succeeded');
    const [approval] = await w.store.approvals.listForRun(asked.runId);
    expect(approval).toMatchObject({
      status: 'rejected',
      rule: 'rule 2 of http_request (no prod in the release freeze)',
    });
  });

  it('the same freeze raises the quorum for database deploys: one approval is not enough, the second runs it once', async () => {
    const { url, asked } = await askToPost('db', 'db-migrate');
    const card = await w.card(asked);
    await w.click(w.message(card), PEOPLE.manager, ACTION_IDS.approve);
    await w.waitFor('progress on the card', () => wordsOf(w.message(card)).includes('1 of 2'));
    expect(w.hits(url)).toEqual([]);
    expect((await w.store.approvals.get(card.approvalId))?.status).toBe('pending');
    await w.click(w.message(card), PEOPLE.sreA, ACTION_IDS.approve);
    const run = await w.ended(asked.runId);
    expect(w.hits(url)).toHaveLength(1);
    expect(run.state.actions.map((a) => a.outcome)).toEqual(['succeeded']);
    const record = await w.store.approvals.get(card.approvalId);
    expect(record?.votes?.map((v) => v.by)).toEqual([PEOPLE.manager, PEOPLE.sreA]);
  });

  it('outside the freeze rules, a deploy is asked of one approver as before', async () => {
    const { url, asked } = await askToPost('plain', 'staging-web');
    const card = await w.card(asked);
    await w.click(w.message(card), PEOPLE.manager, ACTION_IDS.approve);
    await w.ended(asked.runId);
    expect(w.hits(url)).toHaveLength(1);
  });
});
