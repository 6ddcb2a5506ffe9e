/**
 * "Approve again" after an unknown outcome, on the worker's side: the next approval round's resume job
 * runs the call once more (once, whatever is duplicated), and the card, the thread and the thread's
 * memory learn how it went. Also: the expiry timer finishing a decision whose resume job never came.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { addRunJob } from '../../src/queue/runs-queue.js';
import { nextRoundOf } from '../../src/store/ids.js';
import { call, scriptedModel } from '../support/engine.js';
import { createHarness } from '../support/worker-harness.js';

type Harness = Awaited<ReturnType<typeof createHarness>>;
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** The run's lease for 200 ms, as a worker about to die takes it, once the worker's own job let it go. */
const takeLease = (runId: string, holder: string) =>
  h!.waitFor(`the lease of ${runId}`, async () => {
    const lease = await h!.store.leases.acquire(runId, holder, 200);
    return lease.acquired ? lease : null;
  });

/**
 * A run whose approved `restart` was begun by a worker that then died: the next worker reports the
 * outcome as unknown and the run completes. Returns the run and the first round's approval.
 */
async function runLeftUnknown() {
  h = await createHarness({
    model: scriptedModel([
      { calls: [call('restart', { service: 'payments' })] },
      { text: 'The restart outcome is unknown; please check payments.' },
    ]),
  });
  h.startWorker();
  const data = h.startJob('restart payments');
  const runId = await h.enqueueStart(data);
  const card = await h.waitFor('card', () => h!.notifier.of('card')[0]);
  const approvalId = card.view.approvalId;
  await h.store.approvals.decide({ approvalId, decision: 'approved', decidedBy: 'UMGR', now: Date.now() });
  const lease = await takeLease(runId, 'dead-worker');
  await h.store.ledger.begin({
    approvalId,
    fence: lease.fence,
    argsHash: card.view.argsHash,
    now: Date.now(),
  });
  await h.leaseLapsed(runId);
  await addRunJob(h.queue, { name: 'resume', data: { v: 1, runId, approvalId } });
  await h.waitForStatus(runId, 'completed');
  await h.waitFor('unknown card', () =>
    h!.notifier.of('update_card').find((u) => u.view.status === 'outcome_unknown'),
  );
  expect(h.executed.filter((e) => e.tool === 'restart')).toHaveLength(0);
  const thread = { teamId: 'T1', channelId: 'C1', threadTs: data.threadTs };
  return { runId, approvalId, card, thread };
}

describe('worker: a call approved again after an unknown outcome', () => {
  it('runs it once more, then tells the card, the thread and its memory; duplicates run nothing', async () => {
    const { runId, approvalId, card, thread } = await runLeftUnknown();
    const again = await h!.store.approvals.reapprove({ approvalId, decidedBy: 'USRE', now: Date.now() });
    const job = { name: 'resume', data: { v: 1, runId, approvalId: again.record.approvalId } } as const;
    await addRunJob(h!.queue, job);
    const note = await h!.waitFor('note', () => h!.notifier.of('note')[0]);

    expect(h!.executed.filter((e) => e.tool === 'restart')).toEqual([
      expect.objectContaining({ args: { service: 'payments' } }),
    ]);
    expect(note.text).toContain('Ran `restart` again, approved again by <@USRE>: it succeeded.');
    expect((await h!.store.ledger.get(again.record.approvalId))?.status).toBe('succeeded');
    expect((await h!.store.ledger.get(approvalId))?.status).toBe('outcome_unknown');
    const update = h!.notifier.of('update_card').at(-1)!;
    expect(update.card).toEqual(card.posted);
    expect(update.view).toMatchObject({
      approvalId: again.record.approvalId,
      status: 'approved',
      decidedBy: 'USRE',
      outcome: expect.stringMatching(/^Ran again: succeeded\. /),
    });
    const memory = await h!.store.threads.history(thread);
    expect(memory.at(-1)).toMatchObject({
      role: 'assistant',
      content: expect.stringContaining(
        'restart was run again after an unknown outcome (approved by USRE): succeeded',
      ),
    });
    // The run itself is left as it ended; the re-run is in its trace.
    expect((await h!.store.runs.loadRun(runId))?.state.status).toBe('completed');
    const trace = await h!.store.runs.readTrace(runId);
    expect(trace.filter((t) => t.type === 'tool_finished')).toHaveLength(1);

    // The same job again (a redelivery under another id) and a stale click: nothing runs a second time.
    await h!.queue.add('resume', job.data, { jobId: 'redelivered-resume' });
    await expect(
      h!.store.approvals.reapprove({ approvalId, decidedBy: 'UOTHER', now: Date.now() }),
    ).resolves.toMatchObject({ won: false });
    await h!.waitFor('redelivery done', async () =>
      (await h!.queue.getJob('redelivered-resume'))?.isCompleted(),
    );
    expect(h!.executed.filter((e) => e.tool === 'restart')).toHaveLength(1);
    expect(h!.notifier.of('note')).toHaveLength(1);
  });

  it('a crash while running it again leaves the outcome unknown again, offering a third round', async () => {
    const { runId, approvalId } = await runLeftUnknown();
    const again = await h!.store.approvals.reapprove({ approvalId, decidedBy: 'USRE', now: Date.now() });
    const second = again.record.approvalId;
    const lease = await takeLease(runId, 'dead-again');
    await h!.store.ledger.begin({
      approvalId: second,
      fence: lease.fence,
      argsHash: again.record.argsHash,
      now: Date.now(),
    });
    await h!.leaseLapsed(runId);
    await addRunJob(h!.queue, { name: 'resume', data: { v: 1, runId, approvalId: second } });
    const note = await h!.waitFor('note', () => h!.notifier.of('note')[0]);

    expect(note.text).toContain('the outcome is unknown again');
    expect(h!.executed.filter((e) => e.tool === 'restart')).toHaveLength(0);
    expect((await h!.store.ledger.get(second))?.status).toBe('outcome_unknown');
    const update = h!.notifier.of('update_card').at(-1)!;
    expect(update.view).toMatchObject({ approvalId: second, status: 'outcome_unknown' });
    const third = await h!.store.approvals.reapprove({
      approvalId: second,
      decidedBy: 'USRE',
      now: Date.now(),
    });
    expect(third).toMatchObject({ won: true, record: { approvalId: nextRoundOf(second) } });
    expect(await h!.store.approvals.wasReported(second)).toBe(true);
    expect(await h!.store.approvals.wasReported(third.record.approvalId)).toBe(false);
  });

  it('the expiry timer finishes a decision whose resume job never came', async () => {
    h = await createHarness({
      model: scriptedModel([
        { calls: [call('restart', { service: 'payments' })] },
        { text: 'Restarted payments.' },
      ]),
    });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('restart payments'));
    const card = await h.waitFor('card', () => h!.notifier.of('card')[0]);
    // Recorded as the bot records it, but the bot died before queueing the resume job.
    await h.store.approvals.decide({
      approvalId: card.view.approvalId,
      decision: 'approved',
      decidedBy: 'UMGR',
      now: Date.now(),
    });
    // The start job that posted the card is done and no other job is due: nothing could move the run.
    await h.waitFor('an idle queue', async () => {
      const counts = await h!.queue.getJobCounts('active', 'wait', 'prioritized');
      return Object.values(counts).every((n) => n === 0);
    });
    expect((await h.store.runs.loadRun(runId))?.state.status).toBe('awaiting_approval');
    const timer = await h.queue.getJob(`expire-${encodeURIComponent(card.view.approvalId)}`);
    await timer?.promote();
    const run = await h.waitForStatus(runId, 'completed');
    expect(run.state.answer).toEqual(['Restarted payments.']);
    expect(h.executed.filter((e) => e.tool === 'restart')).toHaveLength(1);
    expect((await h.store.approvals.get(card.view.approvalId))?.status).toBe('approved');
  });
});
