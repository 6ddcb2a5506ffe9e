import { randomBytes } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/loop/define-tool.js';
import type { AnyTool } from '../../src/loop/tool-contract.js';
import type { ToolResult } from '../../src/loop/tool-result.js';
import { createRedisConnection } from '../../src/queue/connection.js';
import type { StartJobData } from '../../src/queue/job-data.js';
import { createRunsQueue, type RunsQueue } from '../../src/queue/runs-queue.js';
import { nextRoundOf, runIdForEvent } from '../../src/store/ids.js';
import { createStore, type Store } from '../../src/store/store.js';
import { handleResume, handleStart } from '../../src/worker/handlers.js';
import type { WorkerRuntime } from '../../src/worker/runtime.js';
import { deleteKeys } from '../store/redis-fixture.js';
import { call, type ScriptStep, scriptedModel, silentLogger, testTools } from '../support/engine.js';
import { RecordingNotifier } from '../support/recording-notifier.js';
import { type LocalCluster, startLocalCluster } from '../support/redis-cluster.js';

/**
 * An approved call and a person's decision against a real Redis Cluster with one replica per primary,
 * with REDIS_WAIT_REPLICAS' store option on: replicas paused (SIGSTOP), primaries failed over (CLUSTER
 * FAILOVER) and killed. The job handlers are called directly, each call standing for a job delivery
 * (BullMQ delivers at least once); the queue of expiry timers is on the standalone test Redis.
 */
let cluster: LocalCluster;
let client: Cluster;
let queueConnection: Redis;
let queue: RunsQueue;
const prefix = `{lgfo${randomBytes(4).toString('hex')}}`;
const stopped = new Set<number>();

beforeAll(async () => {
  cluster = await startLocalCluster({ masters: 3, replicasPerMaster: 1 });
  client = new Cluster(cluster.seeds.map((s) => ({ host: '127.0.0.1', port: Number(s.split(':')[1]) })));
  client.on('error', () => {});
  queueConnection = createRedisConnection('redis://127.0.0.1:6379', 'producer');
  queue = createRunsQueue(queueConnection, prefix);
}, 90_000);

afterAll(async () => {
  for (const pid of stopped) process.kill(pid, 'SIGCONT');
  await queue?.obliterate({ force: true }).catch(() => {});
  await queue?.close();
  if (queueConnection) await deleteKeys(queueConnection, `${prefix}:*`);
  queueConnection?.disconnect();
  client?.disconnect();
  await cluster?.stop();
});

async function pidOf(port: number): Promise<number> {
  const info = await cluster.cli(port, 'info', 'server');
  return Number(/process_id:(\d+)/.exec(info)?.[1]);
}

/** Freezes a node (SIGSTOP): it answers nothing, acknowledges no replication, until `resume`. */
async function pause(port: number) {
  const pid = await pidOf(port);
  process.kill(pid, 'SIGSTOP');
  stopped.add(pid);
  return async () => {
    process.kill(pid, 'SIGCONT');
    stopped.delete(pid);
    await cluster.waitHealthy(60_000);
  };
}

async function waitFor<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 30_000) {
  const until = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => null);
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Manual failover of the primary serving `key` to its replica; resolves once the replica serves it. */
async function failOver(key: string) {
  const primary = await cluster.primaryFor(key);
  // After an earlier failover the demoted primary rejoins as a replica; the nodes' views of it settle
  // through gossip, so wait for a replica that is listed and whose link to its primary is up.
  const replica = await waitFor(`a replica of ${primary} in sync`, async () => {
    for (const port of await cluster.replicasOf(primary)) {
      if ((await cluster.cli(port, 'info', 'replication')).includes('master_link_status:up')) return port;
    }
    return null;
  });
  // A manual failover the primary does not answer in time (a loaded machine) is given up by Redis after
  // its timeout: ask again until the replica serves the key.
  await waitFor(
    `${replica} to serve ${key}`,
    async () => {
      await cluster.cli(replica, 'cluster', 'failover').catch(() => {});
      return waitFor(
        `${replica} to serve ${key}`,
        async () => (await cluster.primaryFor(key)) === replica,
        10_000,
      )
        .then(() => true)
        .catch(() => false);
    },
    75_000,
  );
  await cluster.waitHealthy(60_000);
  return { from: primary, to: replica };
}

/** A write tool that waits for the test to let it finish, counting its executions. */
function gatedDeploy() {
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const runs: string[] = [];
  const tool = defineTool({
    name: 'deploy',
    description: 'Deploy a service',
    effect: 'write',
    parameters: z.object({ service: z.string() }),
    timeoutMs: 120_000,
    async execute(args) {
      runs.push(args.service);
      await gate;
      return { deployed: args.service };
    },
  });
  return { tool, runs, release: () => open() };
}

let events = 0;

/** One deployment's view of the cluster: a store with the given WAIT setting, workers, a model. */
function world(options: {
  waitReplicas: number;
  model: ReturnType<typeof scriptedModel>;
  tools?: ReadonlyMap<string, AnyTool>;
}) {
  const store: Store = createStore(client, {
    prefix,
    waitReplicas: options.waitReplicas,
    // Room for a loaded machine's replica to answer; a frozen one never does.
    waitTimeoutMs: 1_500,
  });
  const notifier = new RecordingNotifier();
  const { tools, executed } = testTools();
  const runtime = (workerId: string): WorkerRuntime => ({
    store,
    queue,
    notifier,
    model: options.model,
    tools: options.tools ?? tools,
    policy: {
      limits: {
        maxSteps: 12,
        deadlineMs: 120_000,
        maxTokens: 1e6,
        maxReplyTokens: 4096,
        maxCostUsd: 100,
        prices: {},
        defaultPrice: { inputPerMTok: 0, outputPerMTok: 0 },
        maxConsecutiveToolErrors: 3,
        maxIdenticalCalls: 3,
        maxToolCallsPerReply: 16,
        maxGatedCallsPerPause: 5,
        maxObservationChars: 16_000,
        toolTimeoutMs: 5_000,
        maxAnswerRetries: 2,
        maxAnswerChars: 36_000,
      },
      approversFor: () => ({ users: ['UMGR'], groups: [] }),
      approvalTtlMs: 3_600_000,
      systemPrompt: () => 'You are loopgate (test).',
    },
    clock: { now: () => Date.now() },
    logger: silentLogger,
    workerId,
    // Longer than a failover takes, so renewals that fail meanwhile do not cost the lease.
    leaseTtlMs: 20_000,
    stopping: () => false,
  });
  const restarts = () => executed.filter((e) => e.tool === 'restart').length;

  /** Asks, and returns the run paused on its one approval card. */
  const pausedRun = async (text: string) => {
    events++;
    const data: StartJobData = {
      v: 1,
      eventId: `Ev${prefix.slice(5, -1)}${events}`,
      teamId: 'T1',
      channelId: 'C1',
      threadTs: `1700000000.${String(events).padStart(6, '0')}`,
      messageTs: `1700000000.${String(events).padStart(6, '0')}`,
      userId: 'UREQ',
      text,
      kind: 'mention',
      receivedAt: Date.now(),
    };
    const runId = runIdForEvent(data.eventId);
    await handleStart(runtime('w-start'), data, `start-${events}`);
    const run = await store.runs.loadRun(runId);
    expect(run?.state.status).toBe('awaiting_approval');
    const card = notifier.of('card').find((c) => c.runId === runId);
    if (!card) throw new Error('no approval card');
    const approvalId = card.view.approvalId;
    const keys = store.context.keys;
    return { runId, approvalId, ledgerKey: keys.ledger(approvalId), headerKey: keys.run(runId).header };
  };

  const approve = (approvalId: string) =>
    store.approvals.decide({ approvalId, decision: 'approved', decidedBy: 'UMGR', now: Date.now() });

  const resume = (runId: string, approvalId: string, worker = 'w-resume') =>
    handleResume(runtime(worker), { v: 1, runId, approvalId }, `resume-${approvalId}`);

  const lastToolResult = async (runId: string) => {
    const run = await store.runs.loadRun(runId);
    const tool = run?.state.messages.filter((m) => m.role === 'tool').at(-1);
    return JSON.parse(String(tool?.content)) as ToolResult;
  };

  return { store, notifier, executed, restarts, pausedRun, approve, resume, lastToolResult };
}

/** Reads a hash on a replica (READONLY), to see what a failover to it would keep. */
async function onReplica(port: number, key: string, field: string) {
  const replica = new Redis({ host: '127.0.0.1', port, lazyConnect: true });
  try {
    await replica.connect();
    await replica.readonly();
    return await replica.hget(key, field);
  } finally {
    replica.disconnect();
  }
}

describe('failover without a second execution (REDIS_WAIT_REPLICAS 1)', () => {
  it('runs an approved call once the replica has its executing record, and answers', async () => {
    const w = world({
      waitReplicas: 1,
      model: scriptedModel([{ calls: [call('restart', { service: 'payments' })] }, { text: 'Restarted.' }]),
    });
    const run = await w.pausedRun('restart payments');
    expect((await w.approve(run.approvalId)).won).toBe(true);
    await w.resume(run.runId, run.approvalId);
    expect(w.restarts()).toBe(1);
    expect((await w.store.runs.loadRun(run.runId))?.state.status).toBe('completed');
    expect(w.notifier.of('final').map((f) => f.runId)).toEqual([run.runId]);
    const [replica] = await cluster.replicasOf(await cluster.primaryFor(run.ledgerKey));
    await waitFor('the ledger on the replica', async () =>
      (await onReplica(replica!, run.ledgerKey, 'status')) === 'succeeded' ? true : null,
    );
  }, 60_000);

  it('does not run the call while the replica is frozen: a clear error, "not run" on the card, and it runs once after approving again', async () => {
    const w = world({
      waitReplicas: 1,
      model: scriptedModel([
        { calls: [call('restart', { service: 'search' })] },
        { text: 'The restart was not run; approve it again on its card.' },
      ]),
    });
    const run = await w.pausedRun('restart search');
    expect((await w.approve(run.approvalId)).won).toBe(true);
    const [replica] = await cluster.replicasOf(await cluster.primaryFor(run.ledgerKey));
    const resume = await pause(replica!);
    try {
      await w.resume(run.runId, run.approvalId);
    } finally {
      await resume();
    }
    expect(w.restarts()).toBe(0);
    const result = await w.lastToolResult(run.runId);
    expect(result).toEqual({
      ok: false,
      error: {
        code: 'durability_unconfirmed',
        message:
          'Not run: Redis could not confirm that the record of restart starting reached a replica, so it was not started and nothing happened. It can be approved again from its card.',
      },
    });
    expect(await w.store.ledger.get(run.approvalId)).toMatchObject({ status: 'not_started', attempts: 1 });
    const updates = w.notifier.of('update_card').filter((u) => u.view.approvalId === run.approvalId);
    expect(updates.map((u) => u.view.status)).toEqual(['not_run']);
    expect((await w.store.runs.loadRun(run.runId))?.state.status).toBe('completed');

    // The same resume delivered again runs nothing; "Approve again" runs it, once however often delivered.
    await w.resume(run.runId, run.approvalId);
    expect(w.restarts()).toBe(0);
    const again = await w.store.approvals.reapprove({
      approvalId: run.approvalId,
      decidedBy: 'UMGR',
      now: Date.now(),
    });
    expect(again.won).toBe(true);
    const round2 = nextRoundOf(run.approvalId);
    await w.resume(run.runId, round2);
    await w.resume(run.runId, round2, 'w-other');
    expect(w.restarts()).toBe(1);
    expect((await w.store.ledger.get(round2))?.status).toBe('succeeded');
    expect(w.notifier.of('note').map((n) => n.text)).toEqual([
      expect.stringContaining(
        ':white_check_mark: Ran `restart` again, approved again by <@UMGR>: it succeeded.',
      ),
    ]);
  }, 120_000);

  it('withdraws a decision the frozen replica cannot confirm: pending again, and a later click records it', async () => {
    const w = world({
      waitReplicas: 1,
      model: scriptedModel([{ calls: [call('restart', { service: 'payments' })] }, { text: 'Restarted.' }]),
    });
    const run = await w.pausedRun('restart payments please');
    const [replica] = await cluster.replicasOf(await cluster.primaryFor(run.ledgerKey));
    const resume = await pause(replica!);
    try {
      await expect(w.approve(run.approvalId)).rejects.toMatchObject({ code: 'durability_unconfirmed' });
    } finally {
      await resume();
    }
    expect(await w.store.approvals.get(run.approvalId)).toMatchObject({ status: 'pending', decidedBy: null });
    expect(await w.store.ledger.get(run.approvalId)).toBeNull();
    // Nothing to apply: the paused run stays paused and nothing runs.
    await w.resume(run.runId, run.approvalId);
    expect(w.restarts()).toBe(0);
    expect((await w.store.runs.loadRun(run.runId))?.state.status).toBe('awaiting_approval');

    expect(await w.approve(run.approvalId)).toMatchObject({ won: true, record: { status: 'approved' } });
    await w.resume(run.runId, run.approvalId);
    expect(w.restarts()).toBe(1);
  }, 120_000);

  it('CLUSTER FAILOVER of the node holding a paused run, then Approve: runs once and answers', async () => {
    const w = world({
      waitReplicas: 1,
      model: scriptedModel([{ calls: [call('restart', { service: 'payments' })] }, { text: 'Restarted.' }]),
    });
    const run = await w.pausedRun('restart payments after failover');
    const moved = await failOver(run.headerKey);
    expect(moved.to).not.toBe(moved.from);
    expect((await w.approve(run.approvalId)).won).toBe(true);
    await w.resume(run.runId, run.approvalId);
    await w.resume(run.runId, run.approvalId, 'w-other');
    expect(w.restarts()).toBe(1);
    expect((await w.store.runs.loadRun(run.runId))?.state.status).toBe('completed');
    expect(w.notifier.of('final').map((f) => f.runId)).toEqual([run.runId]);
  }, 120_000);

  it('a failover while the approved call executes: never a second execution', async () => {
    const deploy = gatedDeploy();
    const w = world({
      waitReplicas: 1,
      model: scriptedModel([{ calls: [call('deploy', { service: 'api' })] }, { text: 'Deployed.' }]),
      tools: new Map([['deploy', deploy.tool]]),
    });
    const run = await w.pausedRun('deploy api');
    await w.approve(run.approvalId);
    const first = w.resume(run.runId, run.approvalId, 'w-first');
    await waitFor('the deploy to start', async () => deploy.runs.length === 1);
    await failOver(run.ledgerKey);
    // A redelivered job on another worker meanwhile: the run is leased, and the ledger says executing.
    expect(await w.resume(run.runId, run.approvalId, 'w-second')).toMatchObject({ type: 'busy' });
    expect(await w.store.ledger.get(run.approvalId)).toMatchObject({ status: 'executing' });
    deploy.release();
    await first;
    await w.resume(run.runId, run.approvalId, 'w-third');
    expect(deploy.runs).toEqual(['api']);
    expect(await w.store.ledger.get(run.approvalId)).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect((await w.store.runs.loadRun(run.runId))?.state.status).toBe('completed');
  }, 120_000);
});

describe('a primary that dies with a frozen replica: what WAIT changes', () => {
  /**
   * The worker starts the call while the replica is frozen, then the primary dies and the replica, which
   * never saw `executing`, is promoted; a redelivered job runs the run from the replica's data.
   */
  async function crashScenario(waitReplicas: number) {
    // Asked: restart; told a tool result: answer.
    const reply: ScriptStep = (req) =>
      req.messages.at(-1)?.role === 'user'
        ? { calls: [call('restart', { service: 'payments' })] }
        : { text: 'Done.' };
    const w = world({ waitReplicas, model: scriptedModel(Array.from({ length: 20 }, () => reply)) });
    // A run on a primary that still has a live replica (an earlier scenario may have killed one).
    let run = await w.pausedRun('restart payments (crash)');
    while ((await cluster.replicasOf(await cluster.primaryFor(run.headerKey))).length === 0) {
      run = await w.pausedRun('restart payments (crash)');
    }
    expect((await w.approve(run.approvalId)).won).toBe(true);
    const primary = await cluster.primaryFor(run.headerKey);
    const [replica] = await cluster.replicasOf(primary);
    const resumeReplica = await pause(replica!);
    // Cut the link too: a frozen replica's socket would still buffer the stream and replay it on waking.
    await cluster.cli(primary, 'client', 'kill', 'type', 'replica');
    let first: Awaited<ReturnType<typeof w.resume>>;
    try {
      first = await w.resume(run.runId, run.approvalId, 'w-doomed');
    } finally {
      await cluster.kill(primary);
      await resumeReplica();
    }
    expect(first).toMatchObject({ type: 'done' });
    const before = w.restarts();
    await waitFor(
      `${replica} to take over`,
      async () => (await cluster.primaryFor(run.headerKey)) === replica,
    );
    // The job is delivered again (at least once); the new primary's data decides what it does.
    await waitFor('the run to resume on the new primary', async () => {
      const result = await w.resume(run.runId, run.approvalId, 'w-successor');
      return result.type === 'done';
    });
    return { before, after: w.restarts(), last: await w.lastToolResult(run.runId) };
  }

  it('with WAIT on, nothing runs before the record is on a replica: at most one execution', async () => {
    const { before, after, last } = await crashScenario(1);
    expect(before).toBe(0);
    // The promoted node has no replica left, so the successor does not run it either: never twice.
    expect(after).toBe(0);
    expect(last).toMatchObject({ ok: false, error: { code: 'durability_unconfirmed' } });
  }, 180_000);

  it('without WAIT (the default), the promoted replica forgets the execution and it runs twice', async () => {
    const { before, after } = await crashScenario(0);
    expect(before).toBe(1);
    expect(after).toBe(2);
  }, 180_000);
});
