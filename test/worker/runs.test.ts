import { afterEach, describe, expect, it } from 'vitest';
import type { ToolResult } from '../../src/loop/tool-result.js';
import { startJobId } from '../../src/queue/job-ids.js';
import { addRunJob } from '../../src/queue/runs-queue.js';
import { approvalIdFor } from '../../src/store/ids.js';
import { advanceRun } from '../../src/worker/advance.js';
import { call, scriptedModel } from '../support/engine.js';
import { createHarness } from '../support/worker-harness.js';

type Harness = Awaited<ReturnType<typeof createHarness>>;
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const lastToolResult = (messages: { role: string; content?: string | null }[]) =>
  JSON.parse(messages.filter((m) => m.role === 'tool').at(-1)!.content!) as ToolResult;

/**
 * Waits until the worker has finished the start job of `data`: by then the run's end is delivered and
 * the thread released (or, for a message behind a waiting run, the message is parked in the inbox).
 */
const startJobDone = (data: { eventId: string }) =>
  h!.waitFor(`the start job of ${data.eventId} to finish`, async () =>
    (await h!.queue.getJob(startJobId(data.eventId)))?.isCompleted(),
  );

describe('worker: runs through the queue', () => {
  it('answers with a read tool and remembers the exchange in the thread', async () => {
    h = await createHarness({
      model: scriptedModel([
        { calls: [call('lookup', { service: 'payments' })] },
        { text: 'payments is ok' },
      ]),
    });
    h.startWorker();
    const data = h.startJob('is payments ok?');
    const runId = await h.enqueueStart(data);
    const run = await h.waitForStatus(runId, 'completed');
    expect(run.state.answer).toEqual(['payments is ok']);
    await h.waitFor('final answer', () => h!.notifier.of('final').length === 1);
    expect(h.notifier.of('reaction').map((r) => r.phase)).toEqual(['working', 'done']);
    // The run is stored completed before its answer is posted and the thread remembers the exchange.
    await startJobDone(data);
    const history = await h.store.threads.history({ teamId: 'T1', channelId: 'C1', threadTs: data.threadTs });
    expect(history).toEqual([
      { role: 'user', content: 'is payments ok?' },
      { role: 'assistant', content: 'payments is ok' },
    ]);
    const trace = await h.store.runs.readTrace(runId);
    expect(trace.map((t) => t.type)).toContain('tool_finished');
  });

  it('starts one run for a duplicated start job', async () => {
    const model = scriptedModel([{ text: 'once' }, { text: 'twice' }]);
    h = await createHarness({ model });
    h.startWorker();
    const data = h.startJob('hello');
    const runId = await h.enqueueStart(data);
    await h.enqueueStart(data);
    await h.waitForStatus(runId, 'completed');
    await startJobDone(data);
    // A redelivery after completion (a different BullMQ job id) finds the run done and posts nothing.
    await h.jobDone(
      await addRunJob(h.queue, { name: 'start', data: { ...data, queuedBehind: 'r-someone' } }),
    );
    expect(model.requests).toHaveLength(1);
    expect(h.notifier.of('final')).toHaveLength(1);
  });

  it('pauses in one worker and resumes in another, executing the approved call once', async () => {
    h = await createHarness({
      model: scriptedModel([
        { calls: [call('restart', { service: 'payments' })], text: 'restarting' },
        { text: 'Restarted payments.' },
      ]),
    });
    const first = h.startWorker('first');
    const runId = await h.enqueueStart(h.startJob('restart payments'));
    await h.waitForStatus(runId, 'awaiting_approval');
    const card = await h.waitFor('card', () => h!.notifier.of('card')[0]);
    expect(card.view).toMatchObject({
      tool: 'restart',
      args: { service: 'payments' },
      status: 'pending',
      reason: 'restarting',
    });
    await h.stopWorker(first);
    const approvalId = card.view.approvalId;
    const expireJob = await h.queue.getJob(`expire-${encodeURIComponent(approvalId)}`);
    expect(await expireJob?.getState()).toBe('delayed');

    h.startWorker('second');
    await h.decide(approvalId, 'approved');
    await h.decide(approvalId, 'approved'); // a double click: no second decision, no second job
    const run = await h.waitForStatus(runId, 'completed');
    expect(h.executed.filter((e) => e.tool === 'restart')).toHaveLength(1);
    expect(lastToolResult(run.state.messages)).toMatchObject({ ok: true, data: { restarted: 'payments' } });
    expect((await h.store.ledger.get(approvalId))?.status).toBe('succeeded');
  });

  it('feeds a rejection with its reason back to the model', async () => {
    const model = scriptedModel([
      { calls: [call('restart', { service: 'search' })] },
      { text: 'Not restarted: rejected.' },
    ]);
    h = await createHarness({ model });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('restart search'));
    const card = await h.waitFor('card', () => h!.notifier.of('card')[0]);
    await h.decide(card.view.approvalId, 'rejected', 'UMGR', 'peak hours');
    const run = await h.waitForStatus(runId, 'completed');
    expect(lastToolResult(run.state.messages)).toMatchObject({ ok: false, error: { code: 'rejected' } });
    expect(JSON.stringify(model.requests[1]!.messages.at(-1))).toContain('peak hours');
    expect(h.executed.filter((e) => e.tool === 'restart')).toHaveLength(0);
  });

  it('expires an undecided approval with a delayed job and the model reads it as not executed', async () => {
    h = await createHarness({
      model: scriptedModel([
        { calls: [call('announce', { text: 'hi all' })] },
        { text: 'Nobody approved, nothing posted.' },
      ]),
      approvalTtlMs: 300,
    });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('tell everyone hi'));
    const run = await h.waitForStatus(runId, 'completed');
    expect(lastToolResult(run.state.messages)).toMatchObject({ ok: false, error: { code: 'expired' } });
    const update = await h.waitFor('expired card', () => h!.notifier.of('update_card')[0]);
    expect(update.view.status).toBe('expired');
  });

  it('applies two approvals decided at once, one job at a time, each executed once', async () => {
    h = await createHarness({
      model: scriptedModel([
        { calls: [call('restart', { service: 'payments' }), call('announce', { text: 'restarting' })] },
        { text: 'Restarted payments and announced it.' },
      ]),
    });
    h.startWorker('a', 2);
    h.startWorker('b', 2);
    const runId = await h.enqueueStart(h.startJob('restart and announce'));
    await h.waitFor('two cards', () => h!.notifier.of('card').length === 2);
    const [c1, c2] = h.notifier.of('card');
    await Promise.all([h.decide(c1!.view.approvalId, 'approved'), h.decide(c2!.view.approvalId, 'approved')]);
    const run = await h.waitForStatus(runId, 'completed');
    expect(
      h.executed
        .filter((e) => e.tool !== 'lookup')
        .map((e) => e.tool)
        .sort(),
    ).toEqual(['announce', 'restart']);
    const results = run.state.messages.filter((m) => m.role === 'tool');
    expect(results).toHaveLength(2);
  });

  it('turns a crash between executing and succeeded into outcome_unknown, never a second execution', async () => {
    h = await createHarness({
      model: scriptedModel([
        { calls: [call('restart', { service: 'payments' })] },
        { text: 'The restart outcome is unknown; please check payments.' },
      ]),
    });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('restart payments'));
    const card = await h.waitFor('card', () => h!.notifier.of('card')[0]);
    const approvalId = card.view.approvalId;
    await h.store.approvals.decide({ approvalId, decision: 'approved', decidedBy: 'UMGR', now: Date.now() });
    // A worker took the lease and began executing, then died: the ledger says `executing`.
    // (once the worker's start job, which posted the card, has let the lease go)
    const lease = await h.waitFor('the lease', async () => {
      const taken = await h!.store.leases.acquire(runId, 'dead-worker', 200);
      return taken.acquired ? taken : null;
    });
    const began = await h.store.ledger.begin({
      approvalId,
      fence: lease.fence,
      argsHash: card.view.argsHash,
      now: Date.now(),
    });
    expect(began.changed).toBe(true);
    await h.leaseLapsed(runId);
    await addRunJob(h.queue, { name: 'resume', data: { v: 1, runId, approvalId } });
    const run = await h.waitForStatus(runId, 'completed');
    expect(h.executed.filter((e) => e.tool === 'restart')).toHaveLength(0);
    expect(lastToolResult(run.state.messages)).toMatchObject({
      ok: false,
      error: { code: 'outcome_unknown' },
    });
    expect((await h.store.ledger.get(approvalId))?.status).toBe('outcome_unknown');
    const update = await h.waitFor('unknown card', () =>
      h!.notifier.of('update_card').find((u) => u.view.status === 'outcome_unknown'),
    );
    expect(update.view.approvalId).toBe(approvalId);
  });

  it('cancels a paused run: approvals cancelled, cards updated, thread told', async () => {
    h = await createHarness({
      model: scriptedModel([{ calls: [call('restart', { service: 'payments' })] }]),
    });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('restart payments'));
    const card = await h.waitFor('card', () => h!.notifier.of('card')[0]);
    await h.store.runs.requestCancel(runId, { by: 'UREQ', at: Date.now() });
    await addRunJob(h.queue, { name: 'cancel', data: { v: 1, runId, by: 'UREQ' } });
    const run = await h.waitForStatus(runId, 'cancelled');
    expect(run.state.stopMessage).toBe('Cancelled by <@UREQ>.');
    // The run is stored cancelled before its approvals are: the card update comes after both.
    await h.waitFor('cancelled card', () =>
      h!.notifier.of('update_card').find((u) => u.view.status === 'cancelled'),
    );
    expect((await h.store.approvals.get(card.view.approvalId))?.status).toBe('cancelled');
    await h.waitFor('end notice', () =>
      h!.notifier.of('final').find((f) => f.answer.stopReason === 'cancelled'),
    );
    // A late approval click changes nothing.
    const late = await h.decide(card.view.approvalId, 'approved');
    expect(late.won).toBe(false);
  });

  it('queues a message sent while the thread has a run waiting, and answers it after', async () => {
    const model = scriptedModel([
      { calls: [call('restart', { service: 'payments' })] },
      { text: 'Restarted payments.' },
      (req) => ({
        text: `Follow-up seen with ${req.messages.filter((m) => m.role === 'user').length} user turns.`,
      }),
    ]);
    h = await createHarness({ model });
    h.startWorker();
    const first = h.startJob('restart payments');
    const runId = await h.enqueueStart(first);
    const card = await h.waitFor('card', () => h!.notifier.of('card')[0]);
    const followUp = h.startJob('and how is it now?', { threadTs: first.threadTs, kind: 'thread_reply' });
    const secondRunId = await h.enqueueStart(followUp);
    await startJobDone(followUp);
    expect(await h.store.runs.loadRun(secondRunId)).toBeNull();
    await h.decide(card.view.approvalId, 'approved');
    await h.waitForStatus(runId, 'completed');
    const second = await h.waitForStatus(secondRunId, 'completed');
    // The follow-up run starts with the thread's memory: the first question and its answer.
    expect(second.state.messages.slice(1, 3)).toEqual([
      { role: 'user', content: 'restart payments' },
      { role: 'assistant', content: 'Restarted payments.' },
    ]);
    expect(second.state.answer).toEqual(['Follow-up seen with 2 user turns.']);
  });

  it('does not lose the queued message when starting it fails right after the thread was handed over', async () => {
    const model = scriptedModel([
      { calls: [call('restart', { service: 'payments' })] },
      { text: 'Restarted payments.' },
      { text: 'Payments looks fine now.' },
    ]);
    h = await createHarness({ model });
    h.startWorker();
    const first = h.startJob('restart payments');
    const runId = await h.enqueueStart(first);
    const card = await h.waitFor('card', () => h!.notifier.of('card')[0]);
    const followUp = h.startJob('and how is it now?', { threadTs: first.threadTs, kind: 'thread_reply' });
    const secondRunId = await h.enqueueStart(followUp);
    await startJobDone(followUp);
    // The first run's end hands the thread to the follow-up, then adding its start job fails once (as if
    // the worker died right there): the resume job fails and is retried.
    const add = h.queue.add.bind(h.queue);
    let failed = 0;
    h.queue.add = ((name, data, opts) => {
      if (name === 'start' && (data as { queuedBehind?: string }).queuedBehind === runId && failed++ === 0) {
        return Promise.reject(new Error('worker died before starting the queued message'));
      }
      return add(name, data, opts);
    }) as typeof h.queue.add;
    await h.decide(card.view.approvalId, 'approved');
    const second = await h.waitForStatus(secondRunId, 'completed');
    expect(failed).toBeGreaterThanOrEqual(2);
    expect(second.state.answer).toEqual(['Payments looks fine now.']);
    // The run is stored completed just before its answer is posted and the thread remembers it.
    await h.waitFor('both answers', () => h!.notifier.of('final').length === 2);
    await h.waitFor(
      'the thread free',
      async () =>
        (await h!.store.threads.activeRun({ teamId: 'T1', channelId: 'C1', threadTs: first.threadTs })) ===
        null,
    );
    expect(
      await h.store.threads.history({ teamId: 'T1', channelId: 'C1', threadTs: first.threadTs }),
    ).toHaveLength(4);
  });

  it('tells the person when a race of messages meets a full thread inbox, instead of dropping it silently', async () => {
    h = await createHarness({
      model: scriptedModel([{ calls: [call('restart', { service: 'payments' })] }]),
      maxQueuedPerThread: 1,
    });
    h.startWorker();
    const first = h.startJob('restart payments');
    const runId = await h.enqueueStart(first);
    await h.waitFor('card', () => h!.notifier.of('card')[0]);
    const queued = h.startJob('and now?', { threadTs: first.threadTs, kind: 'thread_reply' });
    await h.enqueueStart(queued);
    await startJobDone(queued);
    const late = h.startJob('hello?', { threadTs: first.threadTs, kind: 'thread_reply', userId: 'ULATE' });
    const lateRunId = await h.enqueueStart(late);
    await startJobDone(late);
    expect(h.notifier.of('note')).toEqual([
      {
        type: 'note',
        runId: lateRunId,
        text: '<@ULATE> I could not take your message: too many messages already wait in this thread for the run working here. Please send it again once it has answered.',
      },
    ]);
    expect(await h.store.runs.loadRun(lateRunId)).toBeNull();
    expect((await h.store.runs.loadRun(runId))?.state.status).toBe('awaiting_approval');
  });

  it('keeps working when its Redis connections are killed mid-run', async () => {
    const gate = { release: () => {} };
    const held = new Promise<void>((r) => {
      gate.release = r;
    });
    h = await createHarness({
      model: scriptedModel([
        async () => {
          await held;
          return { calls: [call('lookup', { service: 'a' })] };
        },
        { text: 'survived' },
      ]),
    });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('survive'));
    await h.waitForStatus(runId, 'running');
    for (const id of await h.clientIds())
      await h.store.context.redis.client('KILL', 'ID', id).catch(() => {});
    gate.release();
    const run = await h.waitForStatus(runId, 'completed', 15_000);
    expect(run.state.answer).toEqual(['survived']);
  });

  it('takes jobs again after its connections were killed while idle', async () => {
    const harness = await createHarness({ model: scriptedModel([{ text: 'still here' }]) });
    h = harness;
    h.startWorker();
    // Idle: the worker's own connection is blocked waiting for a job.
    await h.waitFor('the worker to block waiting for jobs', async () => {
      const list = (await harness.store.context.redis.client('LIST')) as string;
      const ours = new Set(await harness.clientIds());
      return list.split('\n').some((l) => / cmd=bzpopmin/.test(l) && ours.has(/id=(\d+)/.exec(l)?.[1] ?? ''));
    });
    for (const id of await h.clientIds())
      await h.store.context.redis.client('KILL', 'ID', id).catch(() => {});
    // Asked while the connections are down or coming back: the job waits in the queue either way.
    const runId = await h.enqueueStart(h.startJob('ping'));
    const run = await h.waitForStatus(runId, 'completed', 15_000);
    expect(run.state.answer).toEqual(['still here']);
  });

  it('re-posts a card that Slack refused, by retrying the job', async () => {
    h = await createHarness({
      model: scriptedModel([{ calls: [call('restart', { service: 'payments' })] }]),
    });
    h.notifier.failCards = 1;
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('restart payments'));
    await h.waitFor('card after a retry', () => h!.notifier.of('card')[0], 15_000);
    const approvals = await h.store.approvals.listForRun(runId);
    expect(approvals).toHaveLength(1);
    expect(approvals[0]!.card).not.toBeNull();
  });

  it('advancing the same run twice at once: the second waits for the lease', async () => {
    let modelCalled = () => {};
    const inModel = new Promise<void>((r) => {
      modelCalled = r;
    });
    let letModelAnswer = () => {};
    const answer = new Promise<void>((r) => {
      letModelAnswer = r;
    });
    const model = scriptedModel([
      async () => {
        modelCalled();
        await answer;
        return { text: 'done' };
      },
    ]);
    h = await createHarness({ model });
    const data = h.startJob('x');
    const rt = h.runtime('direct');
    const { handleStart } = await import('../../src/worker/handlers.js');
    const started = handleStart(rt, data, 'j1');
    // The model is called while the first job holds the run's lease (however slow the machine is).
    await inModel;
    const second = await advanceRun(rt, approvalIdFor('r-x', 'c').split('.')[0]!, 'j2');
    expect(second.type).toBe('done'); // a run that does not exist: nothing to do
    const concurrent = await advanceRun(
      rt,
      (await import('../../src/store/ids.js')).runIdForEvent(data.eventId),
      'j3',
    );
    expect(concurrent.type).toBe('busy');
    letModelAnswer();
    expect(await started).toEqual({ type: 'done' });
  });
});
