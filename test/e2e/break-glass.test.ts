/**
 * Break glass end to end with loopgate's real processes (`npm run bot` and a `npm run worker`), real
 * Redis, the fake Slack and OpenAI, and signed clicks and form submissions. A freeze in force denies prod
 * deploys with break glass allowed: the card offers Break glass and Reject (no Approve); the requester is
 * refused even though the rule lists them; a break-glass approver's reason and incident are required,
 * and their submission runs the call once, is posted in the thread and the audit channel, flagged for
 * review in the audit log and listed by `loopgate audit --break-glass`. The override is single-use: a
 * second submission changes nothing, and a later identical call asks again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTION_IDS, CALLBACK_IDS } from '../../src/slack/ids.js';
import { emptyWorkDir, runCli } from '../cli/cli-harness.js';
import { interactivityBody, makeTriggerId, viewSubmissionPayload } from '../fakes/slack-signing.js';
import { callThenAnswer, succeeded } from './support/model-brains.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

const HOUR = 3_600_000;
const AUDIT = 'C0AUDITBG';

/** A UTC wall time as the policy writes it. */
const utc = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');

let w: SlackWorld;
const work = emptyWorkDir();
beforeAll(async () => {
  const now = Date.now();
  w = await startSlackWorld({
    mode: 'split',
    workers: 1,
    policyExtra: [
      'freezes:',
      '  release:',
      `    windows: [{ start: "${utc(now - HOUR)}", end: "${utc(now + 24 * HOUR)}" }]`,
      'rules:',
      '  http_request:',
      '    - name: no prod in the release freeze',
      '      when: { freeze: release, url: { glob: "*/deploy/prod-*" } }',
      '      outcome: deny',
      '      reason: prod is frozen for the release',
      `      breakGlass: { approvers: [${PEOPLE.requester}, ${PEOPLE.sreGroup}], auditChannel: ${AUDIT} }`,
    ],
  });
}, 120_000);
afterAll(async () => {
  await w?.close();
  work.remove();
}, 60_000);

const DONE = 'The deploy went through.';
const NOT_DONE = 'The deploy did not happen.';

async function askToDeploy(tag: string, url: string) {
  w.model.brain(
    tag,
    callThenAnswer('http_request', { method: 'POST', url, body: { n: 1 } }, (r) =>
      succeeded(r) ? DONE : NOT_DONE,
    ),
  );
  return w.ask(w.newChannel(), PEOPLE.requester, w.model.tagged(tag, 'please deploy prod payments'));
}

async function submitBreakGlass(user: string, privateMetadata: string, reason: string, incident: string) {
  const res = await w.post(
    interactivityBody(
      viewSubmissionPayload(w.id, {
        user,
        callbackId: CALLBACK_IDS.breakGlass,
        privateMetadata,
        values: {
          reason: { value: { type: 'plain_text_input', value: reason } },
          incident: { value: { type: 'plain_text_input', value: incident } },
        },
      }),
    ),
  );
  expect(res.status).toBe(200);
  const text = await res.text();
  return text ? (JSON.parse(text) as Record<string, unknown>) : null;
}

describe('break glass end to end', { timeout: 120_000 }, () => {
  it('break-glass with reason recorded, announced, single-use, refused to the requester', async () => {
    const url = w.deployUrl('prod-payments');
    const asked = await askToDeploy('glass', url);
    const card = await w.card(asked);
    const blocks = JSON.stringify(w.message(card).blocks);
    expect(blocks).toContain(`"action_id":"${ACTION_IDS.breakGlass}"`);
    expect(blocks).not.toContain(`"action_id":"${ACTION_IDS.approve}"`);
    expect(blocks).toContain('Denied by rule 1 of http_request (no prod in the release freeze)');
    expect(blocks).toContain(`Can decide: <@${PEOPLE.requester}>, <!subteam^${PEOPLE.sreGroup}>`);

    // The requester may never break glass for their own call, though the rule lists them.
    await w.click(w.message(card), PEOPLE.requester, ACTION_IDS.breakGlass);
    await w.waitFor('the requester told no', () =>
      w
        .ephemeralsTo(PEOPLE.requester, card.channel)
        .some((e) => e.text.includes('nobody can break glass for their own call')),
    );

    const triggerId = makeTriggerId();
    await w.click(w.message(card), PEOPLE.sreA, ACTION_IDS.breakGlass, triggerId);
    const view = (await w.viewOpened(triggerId)).args.view as {
      callback_id: string;
      private_metadata: string;
    };
    expect(view.callback_id).toBe(CALLBACK_IDS.breakGlass);
    const meta = view.private_metadata;
    expect(await submitBreakGlass(PEOPLE.requester, meta, 'mine', 'INC-1')).toMatchObject({
      response_action: 'update',
    });
    expect(await submitBreakGlass(PEOPLE.sreA, meta, 'payments are down', '')).toMatchObject({
      response_action: 'errors',
      errors: { incident: expect.any(String) },
    });
    expect(w.hits(url)).toEqual([]);

    expect(await submitBreakGlass(PEOPLE.sreA, meta, 'payments are down', 'INC-77')).toBeNull();
    const run = await w.ended(asked.runId);
    expect(w.hits(url)).toHaveLength(1);
    expect(run.state.actions.map((a) => a.outcome)).toEqual(['succeeded']);
    expect(await w.store.approvals.get(card.approvalId)).toMatchObject({
      status: 'approved',
      decidedBy: PEOPLE.sreA,
      decisionReason: 'break glass (incident INC-77): payments are down',
    });

    // Announced in the thread and in the audit channel.
    const announced = (text: string) =>
      [
        'Break glass',
        `<@${PEOPLE.sreA}>`,
        'no prod in the release freeze',
        'release',
        'INC-77',
        'payments are down',
      ].every((part) => text.includes(part));
    await w.waitFor('the thread told', () =>
      w.slack.thread(asked.channel, asked.threadTs).some((m) => announced(m.text)),
    );
    await w.waitFor('the audit channel told', () => w.slack.messages(AUDIT).some((m) => announced(m.text)));

    // Single use: a second submission changes nothing; a later identical call asks again.
    const again = await submitBreakGlass(PEOPLE.sreB, meta, 'again', 'INC-78');
    expect(JSON.stringify(again)).toContain('already approved');
    const later = await askToDeploy('glass-again', url);
    const laterCard = await w.card(later);
    expect((await w.store.approvals.get(laterCard.approvalId))?.status).toBe('pending');
    expect(w.hits(url)).toHaveLength(1);
    await w.reject(laterCard, PEOPLE.requester, 'not now after all');
    await w.ended(later.runId);
    expect(w.hits(url)).toHaveLength(1);

    // Flagged for review in the audit log, and listed by `loopgate audit --break-glass`.
    const env = { REDIS_URL: 'redis://127.0.0.1:6379', LOOPGATE_PREFIX: w.prefix };
    const listed = await runCli(['audit', '--since', '1h', '--break-glass'], env, work.dir);
    expect(listed.code).toBe(0);
    const entries = listed.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, string>);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      approvalId: card.approvalId,
      decision: 'approved',
      decider: PEOPLE.sreA,
      breakGlass: 'true',
      incident: 'INC-77',
      reviewed: 'false',
      reason: 'break glass (incident INC-77): payments are down',
    });
    const all = await runCli(['audit', '--since', '1h'], env, work.dir);
    const decisions = all.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, string>);
    expect(decisions.map((e) => [e.decision, e.breakGlass])).toEqual([
      ['approved', 'true'],
      ['rejected', ''],
    ]);
  });
  it('a call the rule does not deny gets an ordinary card, with Break glass offered beside Approve', async () => {
    const url = w.deployUrl('staging-web');
    const asked = await askToDeploy('offered', url);
    const card = await w.card(asked);
    const blocks = JSON.stringify(w.message(card).blocks);
    expect(blocks).toContain(`"action_id":"${ACTION_IDS.approve}"`);
    expect(blocks).toContain(`"action_id":"${ACTION_IDS.breakGlass}"`);
    // No deny rule decides it now: there is no glass to break, and Approve decides as usual.
    await w.click(w.message(card), PEOPLE.sreA, ACTION_IDS.breakGlass);
    await w.waitFor('no glass to break', () =>
      w.ephemeralsTo(PEOPLE.sreA, card.channel).some((e) => e.text.includes('No rule denies')),
    );
    await w.click(w.message(card), PEOPLE.manager, ACTION_IDS.approve);
    await w.ended(asked.runId);
    expect(w.hits(url)).toHaveLength(1);
  });
});
