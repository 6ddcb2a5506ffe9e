/**
 * The store's key design on a real Redis Cluster (3 primaries): every Lua script is run, each with
 * KEYS of one slot (CLUSTER KEYSLOT of each declared key; the cluster itself would refuse a CROSSSLOT
 * script or one touching an undeclared key of another slot), every key of a run or a thread shares one
 * slot, runs and threads spread over the primaries, the cross-run keys (indexes, pending approvals,
 * audit stream, rate counters) are used one key per command, and a listing SCANs every primary.
 */
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatedCall } from '../../src/loop/gated-calls.js';
import type { RunState } from '../../src/loop/run-state.js';
import { createRunsQueue } from '../../src/queue/runs-queue.js';
import { approvalIdFor, createStore, nextRoundOf, type Store } from '../../src/store/index.js';
import { SCRIPT_NAMES, type ScriptName } from '../../src/store/scripts.js';
import { advance, newState, realisticState, slack, T0 } from '../store/run-state-fixture.js';
import { type LocalCluster, startLocalCluster } from '../support/redis-cluster.js';

let cluster: LocalCluster;
let redis: Cluster;
let store: Store;
const calls: Array<{ name: ScriptName; keys: readonly string[] }> = [];

beforeAll(async () => {
  cluster = await startLocalCluster({ masters: 3 });
  redis = new Cluster(cluster.seeds.map((s) => ({ host: '127.0.0.1', port: Number(s.split(':')[1]) })));
  store = createStore(redis, { prefix: '{lgslots}' });
  // Every script call of the store passes through the context's runner: record what it declares.
  const run = store.context.script;
  store.context.script = (name, keys, args) => {
    calls.push({ name, keys });
    return run(name, keys, args);
  };
}, 60_000);
afterAll(async () => {
  redis?.disconnect();
  await cluster?.stop();
});

const slotOf = async (key: string) => Number((await redis.cluster('KEYSLOT', key)) as number);

const gated = (toolCallId: string): GatedCall => ({
  toolCallId,
  tool: 'run_action',
  effect: 'write',
  args: { action: 'restart_service', service: 'payments', env: 'staging' },
  argsHash: 'a'.repeat(64),
  idempotent: false,
});

/** A run through every store operation: create, steps, a pause, decisions, the ledger, the end. */
async function everyOperation(runId: string): Promise<void> {
  const state: RunState = realisticState(runId);
  await store.runs.createRun(state, slack);
  const lease = await store.leases.acquire(runId, 'w1', 30_000);
  if (!lease.acquired) throw new Error('lease not acquired');
  const { fence } = lease;
  await store.leases.renew(runId, fence, 30_000);
  const loaded = await store.runs.loadRun(runId);
  if (!loaded) throw new Error('run not loaded');
  const persisted = (await store.runs.saveStep({ runId, fence, state, persisted: loaded.persisted }))
    .persisted;
  await store.runs.appendTrace(runId, [{ type: 'step_started', at: T0 }]);
  await store.results.keep({
    runId,
    fence,
    handle: 'res_00000000_c1',
    text: 'a long result',
    maxRunBytes: 1_000,
  });
  expect(await store.results.read(runId, 'res_00000000_c1')).toBe('a long result');
  await store.runs.setPlaceholder(runId, '1767000001.000200');
  await store.runs.requestCancel(runId, { by: 'U0ALICE', at: T0 });
  const [first, second, third, fourth] = await store.approvals.createApprovals({
    runId,
    fence,
    requester: 'U0ALICE',
    now: T0,
    // The state's own pending call (the pause loadRun reads) and two more.
    approvals: [state.turn?.pending[0] ?? gated('c0'), gated('c1'), gated('c2'), gated('c3')].map((call) => ({
      call,
      approvers: { users: ['U0M'], groups: [] },
      expiresAt: T0 + 3_600_000,
    })),
  });
  if (!first || !second || !third || !fourth) throw new Error('approvals not created');
  // A call in shadow mode: closed at creation, then a Would approve click.
  const [shadow] = await store.approvals.createApprovals({
    runId,
    fence,
    requester: 'U0ALICE',
    now: T0,
    approvals: [
      {
        call: gated('c-shadow'),
        approvers: { users: ['U0M'], groups: [] },
        expiresAt: T0 + 3_600_000,
        decided: { status: 'rejected', via: 'shadow', reason: 'shadow mode: not executed' },
      },
    ],
  });
  if (!shadow) throw new Error('shadow approval not created');
  await store.approvals.shadowDecide({
    approvalId: shadow.approvalId,
    decision: 'would_approve',
    by: 'U0M',
    now: T0 + 5,
  });
  await store.approvals.setCard(first.approvalId, { channel: 'C0OPS', ts: '1767000000.000300' });
  expect((await store.runs.loadRun(runId))?.pauseApprovals.map((a) => a.approvalId)).toEqual([
    first.approvalId,
  ]);
  expect((await store.approvals.listPending(T0, 50)).map((r) => r.runId)).toContain(runId);
  await store.approvals.decide({
    approvalId: first.approvalId,
    decision: 'approved',
    decidedBy: 'U0M',
    now: T0 + 1,
  });
  await store.approvals.decide({
    approvalId: second.approvalId,
    decision: 'approved',
    decidedBy: 'U0M',
    now: T0 + 1,
  });
  await store.ledger.begin({ approvalId: first.approvalId, fence, argsHash: first.argsHash, now: T0 + 2 });
  await store.ledger.finish({
    approvalId: first.approvalId,
    fence,
    outcome: 'succeeded',
    result: { ok: true, data: 'done' },
    now: T0 + 3,
  });
  await store.ledger.begin({ approvalId: second.approvalId, fence, argsHash: second.argsHash, now: T0 + 2 });
  await store.ledger.markOutcomeUnknown(second.approvalId, fence, T0 + 4);
  const again = await store.approvals.reapprove({
    approvalId: second.approvalId,
    decidedBy: 'U0M',
    now: T0 + 5,
  });
  expect(again.record.approvalId).toBe(nextRoundOf(second.approvalId));
  await store.approvals.markReported(again.record.approvalId, T0 + 6);
  const edited = await store.approvals.edit({
    approvalId: third.approvalId,
    editedBy: 'U0M',
    now: T0 + 6,
    next: {
      ...third,
      approvalId: nextRoundOf(third.approvalId),
      args: { edited: true },
      argsHash: 'e'.repeat(64),
      original: { args: third.args, argsHash: third.argsHash },
      editedBy: 'U0M',
      editOf: third.approvalId,
      escalation: { to: { users: ['U0LEAD'], groups: [] }, afterMs: 1 },
    },
  });
  expect(edited.status).toBe('pending');
  // A plan that changed before execution: the ledger blocks the call and a new round asks again.
  const approvedFourth = (
    await store.approvals.decide({
      approvalId: fourth.approvalId,
      decision: 'approved',
      decidedBy: 'U0M',
      now: T0 + 1,
    })
  ).record;
  const planHashes = { approved: 'a'.repeat(64), current: 'b'.repeat(64) };
  const blocked = { ok: false as const, error: { code: 'plan_changed', message: 'changed' } };
  await store.ledger.block({
    approvalId: fourth.approvalId,
    fence,
    result: blocked,
    plans: planHashes,
    now: T0 + 6,
  });
  const replanned = await store.approvals.askAgainForPlan(
    approvedFourth,
    { ok: true, text: 'new plan', hash: planHashes.current },
    T0 + 6,
  );
  expect(replanned.status).toBe('pending');
  expect((await store.approvals.escalate(edited.approvalId, T0 + 6))?.changed).toBe(true);
  expect(await store.approvals.cancelPending(runId, 'U0ALICE', 'cancelled', T0 + 7)).toHaveLength(2);
  // Four asked, the edit's next round, Approve again's round, the plan's new round, and the shadow call.
  expect(await store.approvals.listForRun(runId)).toHaveLength(8);
  // A run paused at its step budget asks for more; the ask is answered once.
  const ask = await store.budgetAsks.create(
    runId,
    { round: 1, reason: 'max_steps', message: 'step budget reached', offer: { steps: 10 }, at: T0 + 7 },
    'U0ALICE',
    T0 + 60_000,
  );
  expect(ask?.status).toBe('pending');
  const answer = await store.budgetAsks.decide({
    runId,
    round: 1,
    decision: 'granted',
    by: 'U0M',
    now: T0 + 8,
  });
  expect(answer).toMatchObject({ outcome: 'decided', record: { status: 'granted', decidedBy: 'U0M' } });
  const ended: RunState = {
    ...advance(state, 1),
    status: 'cancelled',
    stopReason: 'cancelled',
    stopMessage: 'Cancelled.',
    turn: null,
  };
  await store.runs.saveStep({ runId, fence, state: ended, persisted });
  expect(
    (await store.feedback.record({ runId, userId: 'U0ALICE', value: 'good', at: T0 + 8 })).recorded,
  ).toBe(true);
  expect((await store.feedback.comment(runId, 'U0ALICE', 'spot on', T0 + 9)).comment).toBe('spot on');
  expect(await store.feedback.since(T0)).toHaveLength(1);
  await store.runs.expireRun(runId);
  await store.leases.release(runId, fence);

  const thread = { teamId: 'T0TEAM', channelId: 'C0OPS', threadTs: `1767000000.${runId.length}` };
  expect(await store.threads.claim(thread, runId, { n: 1 })).toBe('active');
  expect(await store.threads.claim(thread, `${runId}-next`, { n: 2 })).toBe('queued');
  await store.threads.appendTurns(thread, [{ role: 'user', content: 'hello' }]);
  expect(await store.threads.release(thread, runId, [{ role: 'assistant', content: 'hi' }])).toEqual({
    n: 2,
  });
  await store.rates.hit('user', ['T0TEAM', 'U0ALICE'], 10, 60_000, { eventId: 'Ev0SLOTS', at: T0, now: T0 });
  await store.index.recent({ channel: { teamId: 'T0TEAM', channelId: 'C0OPS' } });
  await store.audit.recent(5);
  const shape = { intervalMs: 1_000, burst: 3 };
  const budget = ['T0TEAM', 'chat.postMessage', 'C0OPS'];
  await store.slackBudget.take(budget, {
    ...shape,
    headroom: 0,
    member: 'w1:call-1',
    rank: 1,
    horizonMs: 5_000,
    staleMs: 10_000,
  });
  await store.slackBudget.pause(budget, shape, 2_000);
  await store.slackBudget.leave(budget, 'w1:call-1');
}

describe('the store on a Redis Cluster', () => {
  it('runs every Lua script, each with keys of one slot', async () => {
    await everyOperation('run-slots');
    expect(new Set(calls.map((c) => c.name))).toEqual(
      // The withdraw scripts run only when no replica confirms a decision: test/cluster/failover.test.ts
      // runs them on a cluster with replicas.
      new Set(
        SCRIPT_NAMES.filter(
          (name) =>
            !['pauseApprovals', 'withdrawDecision', 'withdrawReapproval', 'withdrawEdit'].includes(name),
        ),
      ),
    );
    for (const call of calls) {
      const slots = new Set(await Promise.all(call.keys.map(slotOf)));
      expect({ script: call.name, slots: slots.size }).toEqual({ script: call.name, slots: 1 });
    }
  });

  it('keeps each run and each thread in one slot, and spreads runs and threads over the primaries', async () => {
    const keys = store.context.keys;
    const runIds = Array.from({ length: 24 }, (_, i) => `run-spread-${i}`);
    const owners = new Set<number>();
    for (const runId of runIds) {
      const run = keys.run(runId);
      const approvalId = approvalIdFor(runId, 'call_1');
      const own = [
        run.header,
        run.messages,
        run.evidence,
        run.trace,
        run.lease,
        run.approvals,
        run.compactions,
        run.results,
        run.feedback,
      ];
      const all = [...own, keys.approval(approvalId), keys.ledger(approvalId)];
      expect(new Set(await Promise.all(all.map(slotOf))).size).toBe(1);
      owners.add(await cluster.primaryFor(run.header));
    }
    expect(owners.size).toBe(3);
    const threadOwners = new Set<number>();
    for (let i = 0; i < 24; i++) {
      const t = keys.thread('T0TEAM', 'C0OPS', `1767000000.00${i}`);
      expect(new Set(await Promise.all([t.history, t.active, t.inbox].map(slotOf))).size).toBe(1);
      threadOwners.add(await cluster.primaryFor(t.history));
    }
    expect(threadOwners.size).toBe(3);
    // The queue's keys share the `{lgslots}` tag: one slot, apart from the runs' own.
    const queueSlot = await slotOf('{lgslots}:loopgate-runs:wait');
    expect(await slotOf('{lgslots}:loopgate-runs:meta')).toBe(queueSlot);
    expect(await slotOf(keys.run('run-spread-0').header)).not.toBe(queueSlot);
  });

  it('lists runs of every primary (SCAN on each) and reads rows of runs on different nodes', async () => {
    const runIds = Array.from({ length: 12 }, (_, i) => `run-list-${i}`);
    for (const [i, runId] of runIds.entries()) {
      await store.runs.createRun({ ...newState(runId), createdAt: T0 + 1000 + i }, slack);
    }
    const scan = await store.index.scanRecentIds(100, 10_000);
    expect(scan.complete).toBe(true);
    expect(scan.runIds.filter((id) => id.startsWith('run-list-'))).toEqual([...runIds].reverse());
    const { rows } = await store.index.rows(runIds);
    expect(rows.map((r) => r.runId)).toEqual(runIds);
    const recent = await store.index.recentIds(
      { channel: { teamId: slack.teamId, channelId: slack.channelId } },
      50,
    );
    expect(recent).toEqual(expect.arrayContaining(runIds));
  });

  it('serves the runs queue on the cluster (BullMQ with the hash-tag prefix)', async () => {
    const queue = createRunsQueue(redis, '{lgslots}');
    try {
      await queue.add('start', { x: 1 } as never, { jobId: 'start-slots' });
      expect(await queue.getJobCounts('waiting')).toEqual({ waiting: 1 });
      const owner = await cluster.primaryFor('{lgslots}:loopgate-runs:wait');
      expect((await cluster.cli(owner, 'exists', '{lgslots}:loopgate-runs:wait')).trim()).toBe('1');
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });
});
