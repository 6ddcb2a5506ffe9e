/**
 * End to end, with loopgate's real processes (`npm run bot` and two `npm run worker`) against real Redis,
 * the fake Slack Web API and the fake OpenAI: approval cards and the clicks on them, signed as Slack signs
 * them. Approve, reject with a reason, unauthorised and foreign clicks, a double click, two approvers at
 * once, an approve racing a reject; the write behind the card (a local HTTP fixture) runs at most once,
 * and only when approved. Ends with the bot's and the workers' /metrics moving.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resumeJobId } from '../../src/queue/job-ids.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import {
  askToDeploy,
  DEPLOYED,
  expectPendingCard,
  expectRedrawnCard,
  NOT_DEPLOYED,
  postedWith,
  toolResultsSeen,
} from './support/deploy-case.js';
import { metricSum, readUntil, scrape } from './support/prom-text.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

let w: SlackWorld;
beforeAll(async () => {
  w = await startSlackWorld({ mode: 'split', workers: 2 });
}, 120_000);
afterAll(async () => {
  await w?.close();
}, 60_000);

/** The card message as it was before its first edit (a client that has not refreshed still shows it). */
const asFirstPosted = (message: ReturnType<SlackWorld['message']>) => ({
  ...message,
  blocks: message.history[0]?.blocks ?? message.blocks,
});

/** Waits until `user` got `count` ephemeral notes in `channel`; returns their texts. */
const notesTo = async (user: string, channel: string, count = 1) => {
  await w.waitFor(
    `${count} ephemeral note(s) to ${user}`,
    () => w.ephemeralsTo(user, channel).length >= count,
  );
  return w.ephemeralsTo(user, channel).map((e) => e.text);
};

describe('approval cards through the real bot and worker processes', { timeout: 60_000 }, () => {
  it('approve: the write runs once with the arguments shown, the card says who approved, the answer follows', async () => {
    const c = await askToDeploy(w, 'approve');
    expectPendingCard(w, c);
    expect((await w.store.runs.loadRun(c.asked.runId))?.state.status).toBe('awaiting_approval');
    expect(w.hits(c.url)).toEqual([]);

    const res = await w.click(w.message(c.card), PEOPLE.manager, ACTION_IDS.approve);
    expect(res.status).toBe(200);
    const run = await w.ended(c.asked.runId);

    expect(run.state.status).toBe('completed');
    expect(w.hits(c.url).map((r) => [r.method, JSON.parse(r.body)])).toEqual([
      ['POST', { service: 'payments', version: '1.4.3' }],
    ]);
    await expectRedrawnCard(w, c, new RegExp(`\\*Approved\\* by <@${PEOPLE.manager}>`));
    expect(toolResultsSeen(w, c.tag)).toEqual([expect.stringContaining('"ok":true')]);
    expect(postedWith(w, c, DEPLOYED)).toHaveLength(1);
    const record = await w.store.approvals.get(c.card.approvalId);
    expect(record).toMatchObject({ status: 'approved', decidedBy: PEOPLE.manager });
    expect(w.slack.ephemerals(c.channel)).toEqual([]);
  });

  it('reject with a reason: nothing runs, the card shows the reason, the model reads it as the tool result', async () => {
    const c = await askToDeploy(w, 'reject');
    const before = metricSum(await scrape(w.botMetricsUrl), 'loopgate_approvals_decided_total', {
      decision: 'rejected',
    });
    const reason = 'Not during the change freeze; wait until Monday.';

    // A member of the S0SRE group may decide; the reason modal closes on success (empty 200).
    const res = await w.reject(c.card, PEOPLE.sreA, reason);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
    const run = await w.ended(c.asked.runId);

    expect(w.hits(c.url)).toEqual([]);
    expect(run.state.status).toBe('completed');
    await expectRedrawnCard(w, c, new RegExp(`\\*Rejected\\* by <@${PEOPLE.sreA}>[\\s\\S]*${reason}`));
    const [seen] = toolResultsSeen(w, c.tag);
    expect(JSON.parse(seen ?? '{}')).toEqual({
      ok: false,
      error: {
        code: 'rejected',
        message: expect.stringContaining(`rejected by <@${PEOPLE.sreA}>: ${reason}`),
      },
    });
    expect(postedWith(w, c, NOT_DEPLOYED)).toHaveLength(1);
    expect(await w.store.approvals.get(c.card.approvalId)).toMatchObject({
      status: 'rejected',
      decidedBy: PEOPLE.sreA,
      decisionReason: reason,
    });
    const after = metricSum(await scrape(w.botMetricsUrl), 'loopgate_approvals_decided_total', {
      decision: 'rejected',
    });
    expect(after - before).toBe(1);
  });

  it('unauthorised, self-approving and foreign clicks are refused with a note to the clicker, and change nothing', async () => {
    // The manager asks: an approver, but not of their own run's calls (selfApproval: false).
    const c = await askToDeploy(w, 'unauthorised', PEOPLE.manager);
    expectPendingCard(w, c, PEOPLE.manager);
    const card = w.message(c.card);
    const foreignMessage = { ...card, ts: c.asked.ts };

    const refused = await Promise.all([
      w.click(card, PEOPLE.stranger, ACTION_IDS.approve),
      w.click(card, PEOPLE.manager, ACTION_IDS.approve),
      // The right button, posted from another message than the approval's card.
      w.click(foreignMessage, PEOPLE.sreA, ACTION_IDS.approve),
    ]);
    expect(refused.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(await notesTo(PEOPLE.stranger, c.channel)).toEqual([
      expect.stringMatching(
        /^You may not approve `http_request` calls\. They can be decided by .*Nothing was changed\.$/,
      ),
    ]);
    expect(await notesTo(PEOPLE.manager, c.channel)).toEqual([
      expect.stringContaining('the policy does not let requesters approve their own calls'),
    ]);
    expect(await notesTo(PEOPLE.sreA, c.channel)).toEqual([
      expect.stringContaining('does not belong to the approval card'),
    ]);
    // The notes went to the card's thread, to the clicker only.
    expect(w.slack.ephemerals(c.channel).map((e) => e.thread_ts)).toEqual([
      c.asked.threadTs,
      c.asked.threadTs,
      c.asked.threadTs,
    ]);

    // Nothing changed: still pending, card untouched, no resume queued, nothing ran.
    expect((await w.store.approvals.get(c.card.approvalId))?.status).toBe('pending');
    expect(w.message(c.card).history).toEqual([]);
    expect(await w.queue.getJob(resumeJobId(c.card.approvalId))).toBeUndefined();
    expect(w.hits(c.url)).toEqual([]);

    // Another member of the group approves: now it runs, once.
    await w.click(card, PEOPLE.sreB, ACTION_IDS.approve);
    await w.ended(c.asked.runId);
    expect(w.hits(c.url)).toHaveLength(1);
    await expectRedrawnCard(w, c, new RegExp(`\\*Approved\\* by <@${PEOPLE.sreB}>`));
  });

  it('a double click approves once and runs the write once; the second click is told it was already approved', async () => {
    const c = await askToDeploy(w, 'double');
    const card = w.message(c.card);

    const clicks = await Promise.all([
      w.click(card, PEOPLE.manager, ACTION_IDS.approve),
      w.click(card, PEOPLE.manager, ACTION_IDS.approve),
    ]);
    expect(clicks.map((r) => r.status)).toEqual([200, 200]);
    await w.ended(c.asked.runId);
    expect(await notesTo(PEOPLE.manager, c.channel)).toEqual([
      expect.stringContaining(`already approved by <@${PEOPLE.manager}>`),
    ]);

    // A third click, on the card as first posted (a client that has not refreshed), after the run ended.
    await w.click(asFirstPosted(w.message(c.card)), PEOPLE.manager, ACTION_IDS.approve);
    expect(await notesTo(PEOPLE.manager, c.channel, 2)).toEqual([
      expect.stringContaining('already approved'),
      expect.stringContaining('already approved'),
    ]);

    expect(w.hits(c.url)).toHaveLength(1);
    expect(postedWith(w, c, DEPLOYED)).toHaveLength(1);
    expect(toolResultsSeen(w, c.tag)).toHaveLength(1);
    await expectRedrawnCard(w, c, new RegExp(`\\*Approved\\* by <@${PEOPLE.manager}>`));
  });

  it('two approvers at once: the first decision wins, the write runs once, the other approver is told who won', async () => {
    const c = await askToDeploy(w, 'two-approvers');
    const card = w.message(c.card);

    await Promise.all([
      w.click(card, PEOPLE.manager, ACTION_IDS.approve),
      w.click(card, PEOPLE.sreA, ACTION_IDS.approve),
    ]);
    await w.ended(c.asked.runId);

    const record = await w.store.approvals.get(c.card.approvalId);
    expect(record?.status).toBe('approved');
    const winner = record?.decidedBy ?? '';
    const loser = winner === PEOPLE.manager ? PEOPLE.sreA : PEOPLE.manager;
    expect([PEOPLE.manager, PEOPLE.sreA]).toContain(winner);
    expect(await notesTo(loser, c.channel)).toEqual([
      expect.stringContaining(`already approved by <@${winner}>`),
    ]);
    expect(w.ephemeralsTo(winner, c.channel)).toEqual([]);
    expect(w.hits(c.url)).toHaveLength(1);
    expect(toolResultsSeen(w, c.tag)).toEqual([expect.stringContaining('"ok":true')]);
    await expectRedrawnCard(w, c, new RegExp(`\\*Approved\\* by <@${winner}>`));
  });

  it('an approve and a reject submitted at once: one decision is recorded, and the run, the card and the write follow it', async () => {
    const c = await askToDeploy(w, 'approve-vs-reject');
    const metadata = await w.openRejectModal(c.card, PEOPLE.sreB);

    const [approved, rejected] = await Promise.all([
      w.click(w.message(c.card), PEOPLE.manager, ACTION_IDS.approve),
      w.submitRejectReason(PEOPLE.sreB, metadata, 'Too risky right now.'),
    ]);
    expect(approved.status).toBe(200);
    expect(rejected.status).toBe(200);
    const rejectAnswer = await rejected.text();
    const run = await w.ended(c.asked.runId);
    const record = await w.store.approvals.get(c.card.approvalId);

    if (record?.status === 'approved') {
      expect(record.decidedBy).toBe(PEOPLE.manager);
      expect(w.hits(c.url)).toHaveLength(1);
      // The modal stays open and says why nothing was recorded.
      expect(JSON.parse(rejectAnswer)).toMatchObject({ response_action: 'update' });
      expect(rejectAnswer).toContain('already approved');
      await expectRedrawnCard(w, c, /\*Approved\*/);
      expect(postedWith(w, c, DEPLOYED)).toHaveLength(1);
    } else {
      expect(record).toMatchObject({ status: 'rejected', decidedBy: PEOPLE.sreB });
      expect(w.hits(c.url)).toEqual([]);
      expect(rejectAnswer).toBe('');
      expect(await notesTo(PEOPLE.manager, c.channel)).toEqual([expect.stringContaining('already rejected')]);
      await expectRedrawnCard(w, c, /\*Rejected\*/);
      expect(postedWith(w, c, NOT_DEPLOYED)).toHaveLength(1);
    }
    expect(run.state.status).toBe('completed');
    expect(run.state.actions.map((a) => a.outcome)).toEqual([
      record?.status === 'approved' ? 'succeeded' : 'rejected',
    ]);
  });

  it("/metrics of the bot and of the workers count a decision, its resume job and the write's execution", async () => {
    const scrapeAll = async () => ({
      bot: await scrape(w.botMetricsUrl),
      workers: await Promise.all(w.workerMetricsUrls.map(scrape)),
    });
    const workerSum = (texts: string[], name: string, labels: Record<string, string> = {}) =>
      texts.reduce((sum, text) => sum + metricSum(text, name, labels), 0);
    const before = await scrapeAll();

    const c = await askToDeploy(w, 'metrics');
    await w.click(w.message(c.card), PEOPLE.manager, ACTION_IDS.approve);
    await w.ended(c.asked.runId);
    const jobs = (s: Awaited<ReturnType<typeof scrapeAll>>) =>
      workerSum(s.workers, 'loopgate_jobs_processed_total');
    const after = await readUntil(scrapeAll, (s) => jobs(s) - jobs(before) >= 2);

    const moved = (read: (s: Awaited<ReturnType<typeof scrapeAll>>) => number) => read(after) - read(before);
    expect(moved((s) => metricSum(s.bot, 'loopgate_approvals_decided_total', { decision: 'approved' }))).toBe(
      1,
    );
    expect(
      moved((s) => metricSum(s.bot, 'loopgate_approval_decision_seconds_count', { decision: 'approved' })),
    ).toBe(1);
    expect(
      moved((s) => workerSum(s.workers, 'loopgate_approvals_requested_total', { tool: 'http_request' })),
    ).toBe(1);
    expect(
      moved((s) =>
        workerSum(s.workers, 'loopgate_tool_calls_total', {
          tool: 'http_request',
          effect: 'write',
          outcome: 'ok',
        }),
      ),
    ).toBe(1);
    expect(moved((s) => workerSum(s.workers, 'loopgate_jobs_processed_total', { job: 'resume' }))).toBe(1);
    expect(moved((s) => workerSum(s.workers, 'loopgate_jobs_processed_total', { job: 'start' }))).toBe(1);
    expect(moved((s) => workerSum(s.workers, 'loopgate_steps_total'))).toBe(2);
    expect(
      moved((s) =>
        workerSum(s.workers, 'loopgate_runs_finished_total', {
          status: 'completed',
          stop_reason: 'completed',
        }),
      ),
    ).toBe(1);
    // Both workers serve metrics, and between them they took jobs during this file.
    expect(after.workers).toHaveLength(2);
    expect(workerSum(after.workers, 'loopgate_jobs_processed_total')).toBeGreaterThan(0);
  });
});
