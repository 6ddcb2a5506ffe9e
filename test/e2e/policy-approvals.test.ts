/**
 * Approvals the way teams decide, end to end with loopgate's real processes (`npm run bot` and two
 * `npm run worker`), real Redis, the fake Slack and OpenAI, and signed clicks: a staging deploy allowed by
 * a rule; a prod deploy needing two approvers (one approver twice and the requester do not count;
 * concurrent clicks run it once); an edit changing what runs and what the model reads; a reminder, an
 * escalation, then an expiry with honest results; a grant letting a matching call through, and nothing
 * else; App Home's buttons deciding like the card's. The writes land on a local HTTP fixture that counts
 * them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escalateJobId, expireJobId, remindJobId } from '../../src/queue/job-ids.js';
import { ACTION_IDS, CALLBACK_IDS } from '../../src/slack/ids.js';
import { nextRoundOf } from '../../src/store/index.js';
import {
  blockActionsPayload,
  eventBody,
  eventEnvelope,
  interactivityBody,
  makeTriggerId,
  viewSubmissionPayload,
} from '../fakes/slack-signing.js';
import { toolResultsSeen } from './support/deploy-case.js';
import { callThenAnswer, succeeded } from './support/model-brains.js';
import { buttonsOf, wordsOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

const LEAD = 'U0LEAD';

let w: SlackWorld;
beforeAll(async () => {
  w = await startSlackWorld({
    mode: 'split',
    workers: 2,
    approvalsExtra: ['  trusted: [http_request]'],
    policyExtra: [
      'rules:',
      '  http_request:',
      '    - name: staging deploys',
      '      when: { url: { glob: "*/deploy/staging-*" } }',
      '      outcome: allow',
      '    - name: prod deploys',
      '      when: { url: { glob: "*/deploy/prod-*" } }',
      '      outcome: ask',
      `      approvers: [${PEOPLE.manager}, ${PEOPLE.requester}, ${PEOPLE.sreGroup}]`,
      '      quorum: 2',
      '    - name: announcements',
      '      when: { url: { glob: "*/deploy/notify-*" } }',
      '      outcome: ask',
      '      grant: { args: [url], maxMinutes: 60 }',
      '    - name: slow approvals',
      '      when: { url: { glob: "*/deploy/slow-approval-*" } }',
      '      outcome: ask',
      '      expiresAfterMinutes: 10',
      '      remindAtPercent: [50]',
      `      escalateTo: [${LEAD}]`,
      '      escalateAfterMinutes: 8',
    ],
  });
}, 120_000);
afterAll(async () => {
  await w?.close();
}, 60_000);

const DONE = 'The deploy went through.';
const NOT_DONE = 'The deploy did not happen.';

/** Asks for a POST to `/deploy/<name>` in a fresh channel (or the given thread) under brain `tag`. */
async function askToPost(
  tag: string,
  name: string,
  options: { thread?: { channel: string; threadTs: string }; body?: unknown; brain?: boolean } = {},
) {
  const url = w.deployUrl(name);
  if (options.brain !== false) {
    w.model.brain(
      tag,
      callThenAnswer('http_request', { method: 'POST', url, body: options.body ?? { n: 1 } }, (r) =>
        succeeded(r) ? DONE : NOT_DONE,
      ),
    );
  }
  const text = w.model.tagged(tag, `please post to ${name}`);
  const asked = options.thread
    ? await w.replyInThread(options.thread, PEOPLE.requester, text)
    : await w.ask(w.newChannel(), PEOPLE.requester, text);
  return { url, asked };
}

const clickCard = (
  card: Awaited<ReturnType<SlackWorld['card']>>,
  user: string,
  action = ACTION_IDS.approve,
) => w.click(w.message(card), user, action);

describe('policy rules, quorums, edits, timers and grants end to end', { timeout: 90_000 }, () => {
  it('a staging deploy is allowed by its rule: it runs once without a card, audited as allowed by the rule', async () => {
    const { url, asked } = await askToPost('staging', 'staging-payments');
    const run = await w.ended(asked.runId);
    expect(w.hits(url)).toHaveLength(1);
    expect(run.state.actions.map((a) => a.outcome)).toEqual(['succeeded']);
    expect(
      w.slack
        .thread(asked.channel, asked.threadTs)
        .filter((m) => buttonsOf(m.blocks).some((b) => b.actionId === ACTION_IDS.approve)),
    ).toEqual([]);
    const [approval] = await w.store.approvals.listForRun(asked.runId);
    expect(approval).toMatchObject({
      status: 'approved',
      via: 'rule',
      rule: 'rule 1 of http_request (staging deploys)',
    });
    const audit = (await w.store.audit.recent(50)).find((a) => a.entry.approvalId === approval?.approvalId);
    expect(audit?.entry).toMatchObject({
      via: 'rule',
      reason: 'allowed by rule 1 of http_request (staging deploys)',
    });
  });

  it('a prod deploy needs two approvers: the same one twice and the requester do not count; concurrent clicks run it once', async () => {
    const { url, asked } = await askToPost('prod', 'prod-payments');
    const card = await w.card(asked);
    await clickCard(card, PEOPLE.manager);
    await w.waitFor('progress on the card', () => wordsOf(w.message(card)).includes('1 of 2'));
    await clickCard(card, PEOPLE.manager);
    await clickCard(card, PEOPLE.requester);
    await w.waitFor(
      'the notes',
      () =>
        w.ephemeralsTo(PEOPLE.requester, asked.channel).length > 0 &&
        w.ephemeralsTo(PEOPLE.manager, asked.channel).length > 1,
    );
    expect(w.ephemeralsTo(PEOPLE.manager, asked.channel).map((e) => e.text)).toEqual([
      expect.stringContaining('Your approval is recorded: 1 of 2'),
      expect.stringContaining('You have already approved this'),
    ]);
    expect(w.ephemeralsTo(PEOPLE.requester, asked.channel)[0]?.text).toContain(
      'does not let requesters approve',
    );
    expect(w.hits(url)).toEqual([]);
    expect((await w.store.approvals.get(card.approvalId))?.status).toBe('pending');
    // The two SRE members click at once: one completes the quorum, the write runs once.
    await Promise.all([clickCard(card, PEOPLE.sreA), clickCard(card, PEOPLE.sreB)]);
    const run = await w.ended(asked.runId);
    expect(w.hits(url)).toHaveLength(1);
    expect(run.state.actions.map((a) => a.outcome)).toEqual(['succeeded']);
    const record = await w.store.approvals.get(card.approvalId);
    expect(record?.votes?.map((v) => v.by)).toHaveLength(2);
    expect(record?.votes?.[0]?.by).toBe(PEOPLE.manager);
  });

  it('an edit changes the arguments that run, and the model reads that they were edited', async () => {
    const { url, asked } = await askToPost('edit', 'edit-payments', { body: { version: '1.4.3' } });
    const card = await w.card(asked);
    const triggerId = makeTriggerId();
    await w.click(w.message(card), PEOPLE.manager, ACTION_IDS.edit, triggerId);
    const opened = await w.viewOpened(triggerId);
    const view = opened.args.view as { private_metadata: string };
    const payload = viewSubmissionPayload(w.id, {
      user: PEOPLE.manager,
      callbackId: CALLBACK_IDS.edit,
      privateMetadata: view.private_metadata,
      values: {
        'arg:method': { value: { type: 'static_select', selected_option: { value: 'POST' } } },
        'arg:url': { value: { type: 'plain_text_input', value: url } },
        'arg:body': { value: { type: 'plain_text_input', value: '{"version":"1.4.2"}' } },
      },
    });
    const res = await w.post(interactivityBody(payload));
    expect(await res.text()).toBe('');
    await w.ended(asked.runId);
    expect(w.hits(url).map((r) => JSON.parse(r.body))).toEqual([{ version: '1.4.2' }]);
    const [result] = toolResultsSeen(w, 'edit');
    expect(JSON.parse(result ?? '{}')).toMatchObject({
      ok: true,
      edited: { by: PEOPLE.manager, args: { method: 'POST', url, body: { version: '1.4.2' } } },
    });
    expect(wordsOf(w.message(card))).toContain(`Edited by <@${PEOPLE.manager}>`);
    expect((await w.store.approvals.get(nextRoundOf(card.approvalId)))?.original?.args).toMatchObject({
      body: { version: '1.4.3' },
    });
  });

  it('reminder, then escalation, then expiry: nothing runs, the model is told plainly, the answer is honest', async () => {
    const { url, asked } = await askToPost('slow', 'slow-approval-x');
    const card = await w.card(asked);
    const fire = async (jobId: string) => {
      const job = await w.waitFor(`timer ${jobId}`, () => w.queue.getJob(jobId));
      await job.promote();
    };
    await fire(remindJobId(card.approvalId, 50));
    await w.waitFor('the reminder', () =>
      w.slack
        .thread(asked.channel, asked.threadTs)
        .find((m) => wordsOf(m).includes('Reminder: `http_request`')),
    );
    await fire(escalateJobId(card.approvalId));
    const escalation = await w.waitFor('the escalation', () =>
      w.slack.thread(asked.channel, asked.threadTs).find((m) => wordsOf(m).includes('Escalated')),
    );
    expect(wordsOf(escalation)).toContain(`<@${LEAD}>`);
    await w.waitFor('the lead on the card', () => wordsOf(w.message(card)).includes(`<@${LEAD}>`));
    await fire(expireJobId(card.approvalId));
    const run = await w.ended(asked.runId);
    expect(w.hits(url)).toEqual([]);
    expect(run.state.actions.map((a) => a.outcome)).toEqual(['expired']);
    const [result] = toolResultsSeen(w, 'slow');
    expect(result).toContain('nobody approved or rejected http_request before its approval expired');
    expect(run.state.answer).toEqual([NOT_DONE]);
  });

  it('a grant lets the next matching call in the thread through, not other values, not another thread, not after revoking', async () => {
    const first = await askToPost('grant', 'notify-incident');
    const card = await w.card(first.asked);
    const triggerId = makeTriggerId();
    await w.click(w.message(card), PEOPLE.manager, ACTION_IDS.approveGrant, triggerId);
    const opened = await w.viewOpened(triggerId);
    const res = await w.post(
      interactivityBody(
        viewSubmissionPayload(w.id, {
          user: PEOPLE.manager,
          callbackId: CALLBACK_IDS.grant,
          privateMetadata: (opened.args.view as { private_metadata: string }).private_metadata,
          values: {
            minutes: { value: { type: 'static_select', selected_option: { value: '60' } } },
            scope: { value: { type: 'radio_buttons', selected_option: { value: 'thread' } } },
          },
        }),
      ),
    );
    expect(await res.text()).toBe('');
    await w.ended(first.asked.runId);
    expect(w.hits(first.url)).toHaveLength(1);
    const thread = { channel: first.asked.channel, threadTs: first.asked.threadTs };

    // The same call again in the thread: granted, no card.
    const second = await askToPost('grant-2', 'notify-incident', { thread });
    const run2 = await w.ended(second.asked.runId);
    expect(run2.state.actions.map((a) => [a.outcome, a.decidedBy])).toEqual([['succeeded', PEOPLE.manager]]);
    expect(w.hits(first.url)).toHaveLength(2);
    const [granted] = await w.store.approvals.listForRun(second.asked.runId);
    expect(granted).toMatchObject({ status: 'approved', via: 'grant', decidedBy: PEOPLE.manager });

    // Other values in the same thread: asks (and is decided, so the thread's next run can start).
    const other = await askToPost('grant-3', 'notify-other', { thread });
    const otherApproval = await w.waitFor(
      'an approval for other values',
      async () => (await w.store.approvals.listForRun(other.asked.runId))[0],
    );
    expect(otherApproval.status).toBe('pending');
    const otherCard = await w.card(thread, otherApproval.approvalId);
    await clickCard(otherCard, PEOPLE.manager);
    await w.ended(other.asked.runId);
    // The same values in another thread: asks.
    const elsewhere = await askToPost('grant-4', 'notify-incident', { brain: true });
    await w.card(elsewhere.asked);

    // Revoked (from /loopgate grants), the same call in the thread asks again.
    const listed = await w.slash(thread.channel, PEOPLE.manager, 'grants');
    const grantId = /`(g-[0-9a-f]{12})`/.exec(listed.text)?.[1] ?? '';
    expect(grantId).not.toBe('');
    const revoked = await w.slash(thread.channel, PEOPLE.manager, `grants revoke ${grantId}`);
    expect(revoked.text).toContain(`Revoked grant \`${grantId}\``);
    const after = await askToPost('grant-5', 'notify-incident', { thread });
    const afterApproval = await w.waitFor(
      'an approval after revoking',
      async () => (await w.store.approvals.listForRun(after.asked.runId))[0],
    );
    expect(afterApproval.status).toBe('pending');
    expect(w.hits(first.url)).toHaveLength(2);
    const events = (await w.store.audit.recent(100)).map((a) => a.entry.event);
    expect(events).toContain('grant');
    expect(events).toContain('grant_revoked');
  });

  it("App Home lists the approvals waiting for me with the card's buttons, and its Approve decides", async () => {
    const { url, asked } = await askToPost('home', 'home-payments');
    const card = await w.card(asked);
    const opened = eventEnvelope(w.id, {
      type: 'app_home_opened',
      user: PEOPLE.manager,
      tab: 'home',
      channel: 'D0HOME',
    });
    await w.post(eventBody(opened));
    const home = await w.waitFor('App Home', () => {
      const view = w.slack.home(PEOPLE.manager) as { blocks?: unknown[] } | undefined;
      return view && JSON.stringify(view).includes(card.approvalId) ? view : undefined;
    });
    const buttons = buttonsOf(home.blocks).filter((b) => b.value === card.approvalId);
    expect(buttons.map((b) => b.actionId)).toEqual([ACTION_IDS.approve, ACTION_IDS.reject, ACTION_IDS.edit]);
    expect(JSON.stringify(home)).toContain('Runs waiting on you');
    const payload = {
      ...blockActionsPayload(w.id, {
        user: PEOPLE.manager,
        channel: 'D0HOME',
        messageTs: '1.1',
        action: { actionId: ACTION_IDS.approve, value: card.approvalId },
      }),
      container: { type: 'view', view_id: 'V0HOME' },
      view: { type: 'home', id: 'V0HOME' },
      channel: undefined,
      message: undefined,
    };
    await w.post(interactivityBody(payload));
    await w.ended(asked.runId);
    expect(w.hits(url)).toHaveLength(1);
    await w.waitFor('the card redrawn', () =>
      wordsOf(w.message(card)).includes(`*Approved* by <@${PEOPLE.manager}>`),
    );
  });
});
