import { randomBytes } from 'node:crypto';
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { askTool } from '../../src/agents/ask-tool.js';
import type { AgentDefinition } from '../../src/agents/catalog.js';
import type { ModelPort } from '../../src/loop/model-port.js';
import type { RunLimits } from '../../src/loop/run-limits.js';
import type { AnyTool } from '../../src/loop/tool-contract.js';
import { createRedisConnection } from '../../src/queue/connection.js';
import type { StartJobData } from '../../src/queue/job-data.js';
import { addRunJob, createRunsQueue, type RunsQueue } from '../../src/queue/runs-queue.js';
import { runIdForEvent } from '../../src/store/ids.js';
import { createStore, type Store } from '../../src/store/store.js';
import { CancelWatch } from '../../src/worker/cancel-watch.js';
import { closeWorker, createRunWorker } from '../../src/worker/run-worker.js';
import type { RunPolicy, WorkerRuntime } from '../../src/worker/runtime.js';
import { deleteKeys } from '../store/redis-fixture.js';
import { silentLogger, testTools } from './engine.js';
import { RecordingNotifier } from './recording-notifier.js';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface HarnessOptions {
  model: ModelPort;
  tools?: ReadonlyMap<string, AnyTool>;
  approvalTtlMs?: number;
  limits?: Partial<RunLimits>;
  leaseTtlMs?: number;
  /** Start jobs a thread's inbox holds (the store's default when absent). */
  maxQueuedPerThread?: number;
  /** The policy's rules (e.g. `(tool, args) => decideGate(policy, tool, args)`); none: ask UMGR. */
  gate?: RunPolicy['gate'];
  /** Shadow mode (e.g. `(tool, channel) => shadowReason(policy, tool, channel)`); none: no call is shadowed. */
  shadow?: RunPolicy['shadow'];
  /** Sub-agents; their `ask_` tools join the tools. */
  agents?: AgentDefinition[];
  /** The agents' safety check interval (default long enough never to matter in a test). */
  watchMs?: number;
  /**
   * Workers hear of cancels as `npm run worker` does: by pub/sub (with polling), or by polling only
   * (every `pollMs`). Absent: at step boundaries only.
   */
  cancels?: { pubsub: boolean; pollMs?: number };
}

/**
 * Real Redis and real BullMQ workers, with a scripted model and a recording notifier in place of the
 * OpenAI API and Slack. Each harness has its own random prefix and deletes its keys on close.
 */
export async function createHarness(options: HarnessOptions) {
  const prefix = `{lgt${randomBytes(5).toString('hex')}}`;
  const connections: Redis[] = [];
  const connect = (role: 'store' | 'worker' | 'producer') => {
    const c = createRedisConnection(REDIS_URL, role, {
      connectionName: `lgtest-${prefix.slice(1, -1)}-${role}`,
    });
    connections.push(c);
    return c;
  };
  const store: Store = createStore(connect('store'), {
    prefix,
    ...(options.maxQueuedPerThread ? { maxQueuedPerThread: options.maxQueuedPerThread } : {}),
  });
  const queue: RunsQueue = createRunsQueue(connect('worker'), prefix);
  const notifier = new RecordingNotifier();
  const { tools: defaultTools, executed } = testTools();
  const workers: Worker[] = [];
  let stopping = false;

  const agents = new Map((options.agents ?? []).map((a) => [a.name, a]));
  const tools = new Map(options.tools ?? defaultTools);
  for (const agent of agents.values()) tools.set(`ask_${agent.name}`, askTool(agent));
  const cancels = options.cancels
    ? new CancelWatch({
        isCancelled: (runId) => store.runs.cancelRecorded(runId),
        ...(options.cancels.pubsub ? { subscriber: connect('worker') } : {}),
        channel: store.context.keys.cancels,
        ...(options.cancels.pollMs ? { pollMs: options.cancels.pollMs } : {}),
        logger: silentLogger,
      })
    : undefined;
  await cancels?.start();
  const runtime = (workerId: string): WorkerRuntime => ({
    ...(cancels ? { cancels } : {}),
    store,
    queue,
    notifier,
    model: options.model,
    tools,
    ...(agents.size > 0
      ? { agents: { definitions: agents, modelOf: () => options.model, watchMs: options.watchMs ?? 600_000 } }
      : {}),
    policy: {
      limits: {
        maxSteps: 12,
        deadlineMs: 60_000,
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
        ...options.limits,
      },
      approversFor: () => ({ users: ['UMGR'], groups: [] }),
      approvalTtlMs: options.approvalTtlMs ?? 3_600_000,
      ...(options.gate ? { gate: options.gate } : {}),
      ...(options.shadow ? { shadow: options.shadow } : {}),
      systemPrompt: () => 'You are loopgate (test).',
    },
    clock: { now: () => Date.now() },
    logger: silentLogger,
    workerId,
    leaseTtlMs: options.leaseTtlMs ?? 5_000,
    stopping: () => stopping,
  });

  let events = 0;
  const harness = {
    prefix,
    store,
    queue,
    notifier,
    executed,
    runtime,
    /** Starts a BullMQ worker in this process (a second call makes a second worker). */
    startWorker(name = `w${workers.length + 1}`, concurrency = 2) {
      const worker = createRunWorker(runtime(name), connect('worker'), {
        prefix,
        concurrency,
        lockDurationMs: 3_000,
        stalledIntervalMs: 1_000,
      });
      void worker.run();
      workers.push(worker);
      return worker;
    },
    async stopWorker(worker: Worker) {
      await closeWorker(worker, 5_000);
    },
    setStopping(value: boolean) {
      stopping = value;
    },
    startJob(text: string, extra: Partial<StartJobData> = {}): StartJobData {
      events++;
      return {
        v: 1,
        eventId: `Ev${prefix.slice(4, -1)}${events}`,
        teamId: 'T1',
        channelId: 'C1',
        threadTs: `1700000000.${String(events).padStart(6, '0')}`,
        messageTs: `1700000000.${String(events).padStart(6, '0')}`,
        userId: 'UREQ',
        text,
        kind: 'mention',
        receivedAt: Date.now(),
        ...extra,
      };
    },
    async enqueueStart(data: StartJobData) {
      await addRunJob(queue, { name: 'start', data });
      return runIdForEvent(data.eventId);
    },
    /** Records a decision as the bot does and enqueues the resume job. */
    async decide(approvalId: string, decision: 'approved' | 'rejected', by = 'UMGR', reason?: string) {
      const result = await store.approvals.decide({
        approvalId,
        decision,
        decidedBy: by,
        now: Date.now(),
        ...(reason ? { reason } : {}),
      });
      if (result.won) {
        await addRunJob(queue, { name: 'resume', data: { v: 1, runId: result.record.runId, approvalId } });
      }
      return result;
    },
    async waitFor<T>(
      what: string,
      probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
      timeoutMs = 10_000,
    ): Promise<T> {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const value = await probe();
        if (value) return value;
        if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    /**
     * Waits until `job` was processed for good (completed, or failed with no attempt left): tests that
     * assert a job had no effect wait for this rather than for a fixed time that a loaded machine outlasts.
     */
    async jobDone(job: { id?: string | undefined; name: string }, timeoutMs?: number) {
      return harness.waitFor(
        `job ${job.id} (${job.name}) to finish`,
        async () => {
          const state = job.id ? await queue.getJobState(job.id) : 'unknown';
          return state === 'completed' || state === 'failed' ? state : null;
        },
        timeoutMs,
      );
    },
    /** Waits until nobody holds the run's lease (a dead worker's short lease has lapsed). */
    async leaseLapsed(runId: string) {
      const key = store.context.keys.run(runId).lease;
      return harness.waitFor(
        `the lease of ${runId} to lapse`,
        async () => (await store.context.redis.exists(key)) === 0,
      );
    },
    async waitForStatus(runId: string, status: string, timeoutMs?: number) {
      return harness.waitFor(
        `run ${runId} to be ${status}`,
        async () => {
          const run = await store.runs.loadRun(runId);
          return run?.state.status === status ? run : null;
        },
        timeoutMs,
      );
    },
    /** Connections of this harness, to kill them (CLIENT KILL) in tests. */
    clientIds: async (): Promise<string[]> => {
      const list = (await connections[0]!.client('LIST')) as string;
      return (
        list
          .split('\n')
          // Ours, and BullMQ's blocking connection, which it renames to the queue's prefix and name.
          .filter((l) => l.includes(`name=lgtest-${prefix.slice(1, -1)}`) || l.includes(`name=${prefix}`))
          .map((l) => /id=(\d+)/.exec(l)![1]!)
      );
    },
    async close() {
      stopping = true;
      await Promise.all(workers.map((w) => closeWorker(w, 5_000)));
      await cancels?.close();
      await queue.obliterate({ force: true }).catch(() => {});
      await queue.close();
      const admin = connections[0]!;
      const bare = prefix.slice(1, -1);
      for (const pattern of [`${bare}:*`, `${prefix}:*`]) await deleteKeys(admin, pattern);
      for (const c of connections) c.disconnect();
    },
  };
  return harness;
}
