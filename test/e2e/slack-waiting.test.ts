/**
 * End to end, with loopgate's real processes (`npm run bot` and one `npm run worker`) against real Redis,
 * the fake Slack Web API and the fake OpenAI: what happens while a run waits for approval. The approval
 * expires (its delayed `expire` job is promoted: the policy's shortest expiry is a minute), a new message
 * arrives in the thread, and the slash command lists, explains and cancels.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expireJobId } from '../../src/queue/job-ids.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import type { WireMessage } from '../fakes/openai-server.js';
import {
  askToDeploy,
  DEPLOYED,
  expectDecidedCard,
  NOT_DEPLOYED,
  postedWith,
  toolResultsSeen,
} from './support/deploy-case.js';
import { answerAtOnce } from './support/model-brains.js';
import { metricSum, scrape } from './support/prom-text.js';
import { buttonOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

let w: SlackWorld;
beforeAll(async () => {
  w = await startSlackWorld({ mode: 'split', workers: 1 });
}, 120_000);
afterAll(async () => {
  await w?.close();
}, 60_000);

const notesTo = async (user: string, channel: string, count = 1) => {
  await w.waitFor(
    `${count} ephemeral note(s) to ${user}`,
    () => w.ephemeralsTo(user, channel).length >= count,
  );
  return w.ephemeralsTo(user, channel).map((e) => e.text);
};

/** The card message as first posted, with its buttons (a client that has not refreshed still shows it). */
const asFirstPosted = (message: ReturnType<SlackWorld['message']>) => ({
  ...message,
  blocks: message.history[0]?.blocks ?? message.blocks,
});

const permalinkOf = (channel: string, ts: string) =>
  `https://fake-workspace.slack.com/archives/${channel}/p${ts.replace('.', '')}`;

const contentOf = (m: WireMessage) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content));

describe('while a run waits for approval (real bot and worker processes)', { timeout: 60_000 }, () => {
  it('expiry: the card says it expired, nothing runs, the model reads the expiry as the tool result', async () => {
    const c = await askToDeploy(w, 'expiry');
    const expired = () =>
      scrape(w.workerMetricsUrls[0]!).then((t) =>
        metricSum(t, 'loopgate_approvals_decided_total', { decision: 'expired' }),
      );
    const before = await expired();
    const timer = await w.queue.getJob(expireJobId(c.card.approvalId));
    expect(await timer?.getState()).toBe('delayed');
    // The policy's 30 minutes; run the timer now, through the same job the worker would run then.
    expect(timer?.delay).toBeGreaterThan(29 * 60_000);
    await timer?.promote();
    const run = await w.ended(c.asked.runId);

    expect(w.hits(c.url)).toEqual([]);
    expect(run.state.status).toBe('completed');
    expectDecidedCard(w, c, /\*Expired\*.*without a decision\. Nothing was run\./);
    expect(JSON.parse(toolResultsSeen(w, c.tag)[0] ?? '{}')).toMatchObject({
      ok: false,
      error: { code: 'expired', message: expect.stringContaining('before its approval expired') },
    });
    expect(postedWith(w, c, NOT_DEPLOYED)).toHaveLength(1);
    expect((await w.store.approvals.get(c.card.approvalId))?.status).toBe('expired');

    // A click that comes too late changes nothing and says why.
    await w.click(asFirstPosted(w.message(c.card)), PEOPLE.manager, ACTION_IDS.approve);
    expect(await notesTo(PEOPLE.manager, c.channel)).toEqual([expect.stringContaining('expired')]);
    expect(w.hits(c.url)).toEqual([]);
    expect((await expired()) - before).toBe(1);
  });

  it('a message while the run waits is queued, its author is pointed at the card, and it is answered after the run', async () => {
    const c = await askToDeploy(w, 'busy');
    const laterAnswer = 'The deploy window is 14:00 to 16:00 UTC.';
    w.model.brain('busy-later', answerAtOnce(laterAnswer));
    const later = await w.replyInThread(
      { channel: c.channel, threadTs: c.asked.threadTs },
      PEOPLE.requester,
      w.model.tagged('busy-later', 'and when is the deploy window?'),
    );

    // Told, in the thread and only to them, that the run waits for the card (linked).
    const [note] = await notesTo(PEOPLE.requester, c.channel);
    expect(note).toContain('waiting for approval of');
    expect(note).toContain(permalinkOf(c.channel, c.card.ts));
    expect(note).toContain('Your message is queued');
    expect(w.ephemeralsTo(PEOPLE.requester, c.channel)[0]?.thread_ts).toBe(c.asked.threadTs);
    // The worker took the message and parked it behind the waiting run; the approval is untouched.
    await w.waitFor('the worker to park the message', () =>
      w.processes.some((p) =>
        p.logs().some((l) => l.runId === later.runId && l.msg.startsWith('another run works in this thread')),
      ),
    );
    expect(await w.store.runs.loadRun(later.runId)).toBeNull();
    expect(w.model.requestsOf('busy-later')).toEqual([]);
    expect((await w.store.approvals.get(c.card.approvalId))?.status).toBe('pending');
    expect(buttonOf(w.message(c.card), ACTION_IDS.approve)).toBeDefined();

    await w.click(w.message(c.card), PEOPLE.manager, ACTION_IDS.approve);
    await w.ended(c.asked.runId);
    const run = await w.ended(later.runId);

    expect(run.state.status).toBe('completed');
    expect(w.hits(c.url)).toHaveLength(1);
    // The later run knew what happened before it in the thread.
    const conversation = (w.model.requestsOf('busy-later')[0]?.body.messages ?? [])
      .filter((m) => m.role === 'user' || m.role === 'assistant')
      .map((m) => [m.role, contentOf(m)]);
    expect(conversation).toEqual([
      ['user', expect.stringContaining('please deploy payments 1.4.3')],
      ['assistant', DEPLOYED],
      ['user', expect.stringContaining('and when is the deploy window?')],
    ]);
    // The thread reads in order: the card, the first answer, the answer to the later message.
    const bot = w.slack.thread(c.channel, c.asked.threadTs).filter((m) => m.bot_id);
    expect(bot.map((m) => m.ts)).toEqual([...bot.map((m) => m.ts)].sort());
    const order = [c.card.ts, postedWith(w, c, DEPLOYED)[0]?.ts, postedWith(w, c, laterAnswer)[0]?.ts];
    expect(order.every(Boolean)).toBe(true);
    expect(order.map((ts) => bot.findIndex((m) => m.ts === ts))).toEqual(
      [...order.map((ts) => bot.findIndex((m) => m.ts === ts))].sort((a, b) => a - b),
    );
  });

  it('/loopgate help, status, approvals and cancel: a waiting run is listed, explained and cancelled by its requester', async () => {
    const c = await askToDeploy(w, 'cancel');
    const runId = c.asked.runId;

    const help = await w.slash(c.channel, PEOPLE.stranger, 'help');
    expect(help.response_type).toBe('ephemeral');
    expect(help.text).toContain('/loopgate cancel <run id>');

    const status = await w.slash(c.channel, PEOPLE.stranger, 'status');
    expect(status.text).toContain(runId);
    expect(status.text).toContain('*waiting for approval* of');
    expect(status.text).toContain(`|\`http_request\`> by <@${PEOPLE.manager}>`);

    const mine = await w.slash(c.channel, PEOPLE.manager, 'approvals');
    expect(mine.text).toContain(
      `\`http_request\` (write) asked by <@${PEOPLE.requester}> in <#${c.channel}>`,
    );
    expect(mine.text).toContain(`<${permalinkOf(c.channel, c.card.ts)}`);
    expect((await w.slash(c.channel, PEOPLE.stranger, 'approvals')).text).toBe(
      'No approvals are waiting for you.',
    );

    const denied = await w.slash(c.channel, PEOPLE.stranger, `cancel ${runId}`);
    expect(denied.text).toBe('You cannot cancel that run, or it does not exist.');
    expect((await w.store.runs.loadRun(runId))?.cancelRequest).toBeNull();

    const cancelling = await w.slash(c.channel, PEOPLE.requester, `cancel ${runId}`);
    expect(cancelling.text).toContain(`Cancelling run \`${runId}\``);
    const run = await w.ended(runId);

    expect(run.state.status).toBe('cancelled');
    expect(run.state.stopReason).toBe('cancelled');
    expectDecidedCard(w, c, new RegExp(`\\*Cancelled\\* by <@${PEOPLE.requester}>`));
    // The end notice.
    expect(postedWith(w, c, ':warning: Cancelled by')).toHaveLength(1);
    expect((await w.store.approvals.get(c.card.approvalId))?.status).toBe('cancelled');
    expect(w.model.requestsOf(c.tag)).toHaveLength(1);
    expect(w.hits(c.url)).toEqual([]);

    // After the end: a late click is refused, and the command says the run is over.
    await w.click(asFirstPosted(w.message(c.card)), PEOPLE.manager, ACTION_IDS.approve);
    expect(await notesTo(PEOPLE.manager, c.channel)).toEqual([expect.stringContaining('was cancelled')]);
    expect(w.hits(c.url)).toEqual([]);
    expect((await w.slash(c.channel, PEOPLE.requester, `cancel ${runId}`)).text).toContain(
      'already ended (cancelled)',
    );
    expect((await w.slash(c.channel, PEOPLE.stranger, 'status')).text).toMatch(
      new RegExp(`${runId}.*\\*cancelled\\* \\(cancelled\\)`),
    );
  });

  // The stop message is escaped (it may quote a model), but loopgate's own user mention stays a mention.
  it('the end notice of a cancelled run mentions who cancelled it', async () => {
    const c = await askToDeploy(w, 'cancel-mention');
    await w.slash(c.channel, PEOPLE.requester, `cancel ${c.asked.runId}`);
    await w.ended(c.asked.runId);
    const notice = postedWith(w, c, ':warning: Cancelled by');
    expect(notice).toHaveLength(1);
    expect(notice[0]?.text).toBe(`:warning: Cancelled by <@${PEOPLE.requester}>.`);
  });
});
