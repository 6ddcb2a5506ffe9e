/**
 * End to end on a real Redis Cluster (3 primaries): `npm run bot` and two `npm run worker` get only
 * REDIS_CLUSTER_NODES, the fake Slack and the fake OpenAI. A question is answered; an approval card is
 * posted, every process is restarted while the run waits, and the approval then runs the write once and
 * the answer follows. No process logs an error (no MOVED, CROSSSLOT or EXECABORT anywhere).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { askToDeploy, DEPLOYED, expectRedrawnCard, postedWith } from '../e2e/support/deploy-case.js';
import { callThenAnswer } from '../e2e/support/model-brains.js';
import { wordsOf } from '../e2e/support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from '../e2e/support/slack-world.js';
import { type LocalCluster, startLocalCluster } from '../support/redis-cluster.js';

let cluster: LocalCluster;
let w: SlackWorld;
beforeAll(async () => {
  cluster = await startLocalCluster({ masters: 3 });
  w = await startSlackWorld({ mode: 'split', workers: 2, clusterSeeds: cluster.seeds });
}, 180_000);
afterAll(async () => {
  await w?.close();
  await cluster?.stop();
}, 60_000);

/**
 * Log lines at level error or above, and Redis connection warnings, of the processes running now (a
 * standalone client on a cluster logs MOVED errors, a cross-slot command CROSSSLOT).
 */
const errorsLogged = () =>
  w.processes.flatMap((p) =>
    p
      .logs()
      .filter(
        (l) =>
          (typeof l.level === 'number' ? l.level >= 50 : ['error', 'fatal'].includes(l.level)) ||
          l.msg === 'redis connection error' ||
          l.msg === 'runs queue error',
      ),
  );

describe('loopgate on a Redis Cluster (real bot and worker processes)', { timeout: 120_000 }, () => {
  it('answers a question', async () => {
    const channel = w.newChannel();
    const url = w.statusUrl('cluster');
    w.model.brain(
      'q',
      callThenAnswer('http_get', { url }, () => 'Payments is healthy.'),
    );

    const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged('q', 'is payments healthy?'));
    const run = await w.ended(asked.runId);

    expect(run.state.status).toBe('completed');
    // The run lives on the cluster, on the primary that serves its slot.
    const header = w.store.context.keys.run(asked.runId).header;
    expect((await cluster.cli(await cluster.primaryFor(header), 'exists', header)).trim()).toBe('1');
    expect(w.hits(url).map((r) => r.method)).toEqual(['GET']);
    const answers = w.slack
      .thread(channel, asked.threadTs)
      .filter((m) => wordsOf(m).includes('Payments is healthy'));
    expect(answers).toHaveLength(1);
    expect(errorsLogged()).toEqual([]);
  });

  it('keeps a paused run through a restart of every process, then executes the approved call once', async () => {
    const c = await askToDeploy(w, 'cluster-restart');
    expect((await w.store.runs.loadRun(c.asked.runId))?.state.status).toBe('awaiting_approval');
    const approval = w.store.context.keys.approval(c.card.approvalId);
    expect((await cluster.cli(await cluster.primaryFor(approval), 'exists', approval)).trim()).toBe('1');

    const before = w.processes.map((p) => p.pid);
    await w.restartAll();
    expect(w.processes.map((p) => p.pid).filter((pid) => before.includes(pid))).toEqual([]);

    const res = await w.click(w.message(c.card), PEOPLE.manager, ACTION_IDS.approve);
    expect(res.status).toBe(200);
    const run = await w.ended(c.asked.runId);
    expect(run.state.status).toBe('completed');
    expect(w.hits(c.url).map((r) => [r.method, JSON.parse(r.body)])).toEqual([
      ['POST', { service: 'payments', version: '1.4.3' }],
    ]);
    await expectRedrawnCard(w, c, new RegExp(`\\*Approved\\* by <@${PEOPLE.manager}>`));
    expect(postedWith(w, c, DEPLOYED)).toHaveLength(1);

    // A second click on the card as first posted (a client that has not refreshed) changes nothing.
    const message = w.message(c.card);
    await w.click(
      { ...message, blocks: message.history[0]?.blocks ?? message.blocks },
      PEOPLE.manager,
      ACTION_IDS.approve,
    );
    await w.waitFor(
      'the stale click to be answered',
      () => w.ephemeralsTo(PEOPLE.manager, c.channel).length > 0,
    );
    expect(w.hits(c.url)).toHaveLength(1);
    expect(errorsLogged()).toEqual([]);
  });
});

describe('npm start (bot and worker in one process) on a Redis Cluster', { timeout: 120_000 }, () => {
  let single: SlackWorld;
  beforeAll(async () => {
    single = await startSlackWorld({ mode: 'single', clusterSeeds: cluster.seeds });
  }, 180_000);
  afterAll(async () => {
    await single?.close();
  }, 60_000);

  it('answers a question, the run stored on the cluster', async () => {
    const channel = single.newChannel();
    const url = single.statusUrl('single');
    single.model.brain(
      'one',
      callThenAnswer('http_get', { url }, () => 'Search is healthy.'),
    );
    const asked = await single.ask(
      channel,
      PEOPLE.requester,
      single.model.tagged('one', 'is search healthy?'),
    );
    expect((await single.ended(asked.runId)).state.status).toBe('completed');
    const header = single.store.context.keys.run(asked.runId).header;
    expect((await cluster.cli(await cluster.primaryFor(header), 'exists', header)).trim()).toBe('1');
    const answers = single.slack
      .thread(channel, asked.threadTs)
      .filter((m) => wordsOf(m).includes('Search is healthy'));
    expect(answers).toHaveLength(1);
  });
});
