/**
 * Everything an end-to-end worker test runs against: real Redis under a random prefix, a fake OpenAI, a
 * fake Slack Web API, a slow local HTTP endpoint for `http_get`, a policy file, and worker processes
 * spawned with the matching environment. `close()` kills the processes, stops the fakes and deletes the
 * prefix's keys, whatever state the test left.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { createRedisConnection } from '../../../src/queue/connection.js';
import type { StartJobData } from '../../../src/queue/job-data.js';
import { addRunJob, createRunsQueue, type RunsQueue } from '../../../src/queue/runs-queue.js';
import { runIdForEvent } from '../../../src/store/ids.js';
import type { LoadedRun } from '../../../src/store/runs/run-store.js';
import { createStore, type Store } from '../../../src/store/store.js';
import { type HttpFixture, reply, startHttpFixture } from '../../fakes/http-fixtures.js';
import {
  type FakeOpenAI,
  type FakeOpenAIOptions,
  type FakeStep,
  startFakeOpenAI,
} from '../../fakes/openai-server.js';
import { type FakeSlack, startFakeSlack } from '../../fakes/slack-api-server.js';
import { deleteKeys } from '../../store/redis-fixture.js';
import { killAllLoopgate, type LoopgateProcess, spawnLoopgate } from './loopgate-process.js';
import { httpGetPolicy, type TempDir, tempDir } from './temp-config.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const SLACK_TOKEN = 'xoxb-test';
export const CHANNEL = 'C0E2ETEST';

export interface WorldOptions {
  /** The fake model's script. */
  script: FakeStep[];
  /** How long the slow endpoint holds each response. */
  holdMs: number;
  /** Redis for the workers and the world's own connections; default REDIS_URL (the shared one). */
  redisUrl?: string;
  /** The fake model's context window and token count. */
  openai?: FakeOpenAIOptions;
  /** The policy file's text; default `http_get` allowed on the slow endpoint. */
  policy?: string;
}

export interface World {
  prefix: string;
  store: Store;
  queue: RunsQueue;
  openai: FakeOpenAI;
  slack: FakeSlack;
  /** Answers every GET after `holdMs` with a small JSON status; `requests` records arrivals. */
  slow: HttpFixture;
  /** performance.now() of each answer `slow` sent (none for a request whose client went away first). */
  slowAnswers: number[];
  /** The URL the model is scripted to fetch. */
  slowUrl: string;
  config: TempDir;
  /** The worker's environment (LOOPGATE_CONFIG points at the http_get policy). */
  env: Record<string, string>;
  startWorker(env?: Record<string, string>): LoopgateProcess;
  /** Posts the question in the fake Slack and enqueues its start job, as the bot would. */
  ask(text: string): Promise<{ runId: string; threadTs: string; eventId: string }>;
  loadRun(runId: string): Promise<LoadedRun | null>;
  waitFor<T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs: number): Promise<T>;
  close(): Promise<void>;
}

export async function startWorld(options: WorldOptions): Promise<World> {
  const bare = `lg${randomBytes(5).toString('hex')}`;
  const prefix = `{${bare}}`;
  const connections: Redis[] = [];
  const redisUrl = options.redisUrl ?? REDIS_URL;
  const connect = () => {
    const c = createRedisConnection(redisUrl, 'worker', { connectionName: `lge2e-${bare}` });
    // A test that stops Redis on purpose sees these fail; its assertions are on the processes.
    c.on('error', () => {});
    connections.push(c);
    return c;
  };
  const store = createStore(connect(), { prefix });
  const queue = createRunsQueue(connect(), prefix);
  queue.on('error', () => {});
  const config = tempDir();
  const openai = await startFakeOpenAI(options.script, options.openai);
  const slack = await startFakeSlack({ token: SLACK_TOKEN });
  const slowAnswers: number[] = [];
  const slow = await startHttpFixture(async (_req, res) => {
    await new Promise((r) => setTimeout(r, options.holdMs));
    if (res.destroyed) return;
    reply(res, 200, 'application/json', '{"status":"all systems operational"}');
    slowAnswers.push(performance.now());
  });
  const configPath = config.write('loopgate.yaml', options.policy ?? httpGetPolicy(`${slow.url}/`));
  const env = {
    REDIS_URL: redisUrl,
    LOOPGATE_PREFIX: prefix,
    SLACK_BOT_TOKEN: SLACK_TOKEN,
    SLACK_API_URL: slack.apiUrl,
    OPENAI_API_KEY: 'sk-test',
    OPENAI_BASE_URL: openai.url,
    LOOPGATE_CONFIG: configPath,
    WORKER_LOCK_MS: '2000',
    LOG_LEVEL: 'info',
    // No probe server: a fixed port would collide with other worker processes on this machine.
    METRICS_PORT: '0',
  };
  let asked = 0;

  const world: World = {
    prefix,
    store,
    queue,
    openai,
    slack,
    slow,
    slowAnswers,
    slowUrl: `${slow.url}/status`,
    config,
    env,
    startWorker: (overrides = {}) => spawnLoopgate('worker', { ...env, ...overrides }, config.dir),
    async ask(text) {
      const question = slack.userMessage({ channel: CHANNEL, user: 'U0ALICE', text });
      const data: StartJobData = {
        v: 1,
        eventId: `Ev${bare}${++asked}`,
        teamId: slack.teamId,
        channelId: CHANNEL,
        threadTs: question.ts,
        messageTs: question.ts,
        userId: 'U0ALICE',
        text,
        kind: 'mention',
        receivedAt: Date.now(),
      };
      await addRunJob(queue, { name: 'start', data });
      return { runId: runIdForEvent(data.eventId), threadTs: question.ts, eventId: data.eventId };
    },
    loadRun: (runId) => store.runs.loadRun(runId),
    async waitFor(what, probe, timeoutMs) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const value = await probe();
        if (value) return value;
        if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async close() {
      await killAllLoopgate();
      await Promise.allSettled([openai.close(), slack.close(), slow.close()]);
      await queue.obliterate({ force: true }).catch(() => {});
      await queue.close().catch(() => {});
      const admin = connections[0]!;
      for (const pattern of [`${bare}:*`, `${prefix}:*`]) await deleteKeys(admin, pattern);
      for (const c of connections) c.disconnect();
      config.remove();
    },
  };
  return world;
}
