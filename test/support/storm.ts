/**
 * The incident storm, shared by its end-to-end test and bench/incident-storm.ts: many people ask at once,
 * each answer takes a few model calls of a fixed latency, and loopgate's real processes (`npm run bot`,
 * N × `npm run worker`) answer them against the fake Slack Web API and the fake OpenAI over HTTP, on
 * the real Redis under a random prefix.
 *
 * It records what the storm is judged on, from the outside:
 * - when each question was sent and when its answer reached Slack (the fake's chat.postMessage call);
 * - model requests per run and step, at the fake OpenAI: a step asked twice is a repeated (paid) call;
 * - "job stalled" lines, lock renewal failures and load-gate closings in the workers' logs;
 * - chat.update of a message after its chat.delete (an edit that lands after the placeholder is gone);
 * - each worker's peak resident memory (VmHWM of its Node process);
 * - the most model requests in flight at once at the fake OpenAI.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { freePort } from '../../demo/lib/free-port.js';
import type { RedisTarget } from '../../src/config/redis-target.js';
import { createRedisConnection, type RedisClient } from '../../src/queue/connection.js';
import { createRunsQueue, type RunsQueue } from '../../src/queue/runs-queue.js';
import { killAllLoopgate, type LoopgateProcess, spawnLoopgate } from '../e2e/support/loopgate-process.js';
import { tempDir } from '../e2e/support/temp-config.js';
import { type FakeOpenAI, type FakeStep, startFakeOpenAI } from '../fakes/openai-server.js';
import { type FakeSlack, startFakeSlack } from '../fakes/slack-api-server.js';
import {
  appMentionEvent,
  eventBody,
  eventEnvelope,
  postSigned,
  type SlackIdentity,
  TEST_SIGNING_SECRET,
} from '../fakes/slack-signing.js';
import { deleteKeys } from '../store/redis-fixture.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const TOKEN = 'xoxb-storm-token';
const CHANNEL = 'C0INCIDENT';
const channelOf = (index: number, channels: number) =>
  channels <= 1 ? CHANNEL : `${CHANNEL}${String(index % channels).padStart(2, '0')}`;
const TAG = /\[storm:(\d+)\]/;
const ANSWER = 'storm answer';

export interface StormOptions {
  /** Worker processes. Default 1. */
  workers?: number;
  /** Model calls per answer: `calls - 1` rounds of a cheap read tool, then the answer. Default 3. */
  callsPerRun?: number;
  /** How long the fake model takes to answer each request. */
  modelDelayMs: number;
  /** Extra environment of the workers (none: loopgate's defaults). */
  workerEnv?: Record<string, string>;
  /** Redis URL of every process; default REDIS_URL or the local Redis. */
  redisUrl?: string;
  /** Seed nodes (`host:port`) of a Redis Cluster every process uses instead (REDIS_CLUSTER_NODES). */
  clusterSeeds?: string[];
  /** The fake Slack enforces Slack's documented rate limits (test/fakes/slack-rate-limits.ts). */
  slackRateLimits?: boolean;
  /** Channels the questions are spread over, in turn. Default 1. */
  channels?: number;
  /** Bot processes the questions are sent to, in turn. Default 1. */
  bots?: number;
  /** Every n-th question makes the model ask for a gated post_message call (an approval card). */
  approvalEvery?: number;
}

export interface StormQuestion {
  index: number;
  threadTs: string;
  /** Date.now() when the mention was sent to the bot. */
  sentAt: number;
  /** HTTP status the bot answered. */
  status: number;
}

export interface StormFigures {
  asked: number;
  /** Questions that asked for an approval (no answer expected), and their cards' post latency (ms
   * from the model's reply asking for the call to the card reaching Slack). */
  approvalsAsked: number;
  cardLatencies: number[];
  /** Slack calls made and how many were answered 429, by method. */
  slackCalls: Map<string, { calls: number; rateLimited: number }>;
  answered: number;
  /** Date.now() of the first question sent. */
  firstSentAt: number;
  /** Time to answer of each answered question, ms, in question order. */
  timesToAnswer: number[];
  /** Time from the first question to the last answer, ms (NaN when none was answered). */
  lastAnswerAfterMs: number;
  /** Model requests beyond the first for the same step of the same run. */
  repeatedModelCalls: number;
  modelRequests: number;
  /** The most model requests the fake OpenAI was answering at once. */
  peakModelInFlight: number;
  /** "job stalled" log lines of all workers. */
  stalls: number;
  lockRenewalFailures: number;
  /** Times a worker's load gate stopped it taking jobs. */
  gateClosings: number;
  /** chat.update calls on a message after a successful chat.delete of it. */
  editsAfterDelete: number;
  /** chat.update calls answered message_not_found. */
  editsNotFound: number;
  /** Peak resident memory of each worker's Node process, bytes. */
  peakRssBytes: number[];
}

export interface Storm {
  slack: FakeSlack;
  openai: FakeOpenAI;
  queue: RunsQueue;
  workers: LoopgateProcess[];
  /** /metrics of each worker. */
  workerMetricsUrls: string[];
  bot: LoopgateProcess;
  /** Sends `count` mentions spread evenly over `overMs`, each from a different person, each a new thread. */
  ask(count: number, overMs: number): Promise<StormQuestion[]>;
  /** Questions whose answer is in Slack. */
  answeredCount(): number;
  /** What the storm is judged on, as of now. */
  figures(): StormFigures;
  /** Per question: [sent, eyes reaction, model request, model reply, ..., answer posted] as Date.now(). */
  timelines(): number[][];
  /** Reads each worker's peak RSS (call before close). */
  readPeakRss(): number[];
  /** The Node process of each worker (tsx's child). */
  workerPids: number[];
  /** CPU ms each process used so far: the bot's, then each worker's. */
  cpuMs(): { bot: number; workers: number[] };
  /** Warnings and errors of the processes, for failure messages. */
  diagnostics(): string;
  close(): Promise<void>;
}

/** The Node process that `tsx` runs for a spawned entry point (tsx itself is its parent). */
function nodeChildOf(pid: number): number {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/);
    const child = Number(children[0]);
    return Number.isInteger(child) && child > 0 ? child : pid;
  } catch {
    return pid;
  }
}

/** CPU time a process has used so far (user + system), ms, or NaN when it cannot be read. */
export function cpuMsOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    // utime and stime are fields 14 and 15 of the whole line, in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** Peak resident set size of a process, bytes (VmHWM), or NaN when it cannot be read. */
export function peakRssOf(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /VmHWM:\s+(\d+)\s+kB/.exec(status)?.[1];
    return kb === undefined ? Number.NaN : Number(kb) * 1024;
  } catch {
    return Number.NaN;
  }
}

const textOf = (content: unknown): string =>
  typeof content === 'string' ? content : JSON.stringify(content ?? '');

export async function startStorm(options: StormOptions): Promise<Storm> {
  const redisUrl = options.redisUrl ?? REDIS_URL;
  const calls = options.callsPerRun ?? 3;
  const bare = `lgstorm${randomBytes(4).toString('hex')}`;
  const prefix = `{${bare}}`;
  const connections: RedisClient[] = [];
  const target: RedisTarget = options.clusterSeeds
    ? {
        kind: 'cluster',
        tls: false,
        nodes: options.clusterSeeds.map((seed) => {
          const [host, port] = seed.split(':');
          return { host: host ?? '127.0.0.1', port: Number(port) };
        }),
      }
    : { kind: 'standalone', url: redisUrl };
  const connect = () => {
    const c = createRedisConnection(target, 'producer', { connectionName: bare });
    connections.push(c);
    return c;
  };
  const queue = createRunsQueue(connect(), prefix);
  const config = tempDir();
  const slack = await startFakeSlack({ token: TOKEN, rateLimits: options.slackRateLimits ?? false });
  const channels = options.channels ?? 1;
  const approvalEvery = options.approvalEvery ?? 0;
  /** Date.now() when the model replied asking for each approval question's gated call, by question index. */
  const gatedAt = new Map<string, number>();
  const perStep = new Map<string, number>();
  /** Date.now() of each model request and reply, by question index. */
  const modelTimes = new Map<string, number[]>();
  let inFlight = 0;
  let peakInFlight = 0;
  const brain: FakeStep = async (request) => {
    const messages = request.body.messages;
    const question = [...messages].reverse().find((m) => m.role === 'user');
    const tag = TAG.exec(textOf(question?.content))?.[1] ?? 'untagged';
    const toolResults = messages.filter((m) => m.role === 'tool').length;
    const key = `${tag}/${messages.length}`;
    perStep.set(key, (perStep.get(key) ?? 0) + 1);
    const times = modelTimes.get(tag) ?? [];
    times.push(Date.now());
    modelTimes.set(tag, times);
    inFlight++;
    peakInFlight = Math.max(peakInFlight, inFlight);
    await new Promise((resolve) => setTimeout(resolve, options.modelDelayMs));
    inFlight--;
    modelTimes.get(tag)?.push(Date.now());
    if (approvalEvery > 0 && Number(tag) % approvalEvery === 0 && toolResults === 0) {
      gatedAt.set(tag, Date.now());
      const channel = channelOf(Number(tag), channels);
      return {
        toolCalls: [
          { name: 'post_message', arguments: JSON.stringify({ channel, text: `status [storm:${tag}]` }) },
        ],
      };
    }
    if (toolResults < calls - 1) {
      return { toolCalls: [{ name: 'current_time', arguments: '{}' }] };
    }
    return { content: `${ANSWER} ${tag}: all systems operational.` };
  };
  // One step per request: more than any storm here asks for (repeats included).
  const openai = await startFakeOpenAI(Array.from({ length: 200_000 }, () => brain));
  const configPath = config.write(
    'loopgate.yaml',
    [
      'approvals:',
      '  approvers: [U0MGR]',
      'tools:',
      '  current_time: {}',
      `  post_message: { channels: [${Array.from({ length: channels }, (_, i) => channelOf(i, channels)).join(', ')}] }`,
      // A fake that never says no: loopgate is told Slack allows (nearly) anything.
      ...(options.slackRateLimits
        ? []
        : [
            'slack:',
            '  rateLimits: { tier2PerMinute: 10000, tier3PerMinute: 10000, tier4PerMinute: 10000, postsPerMinutePerChannel: 10000 }',
          ]),
      '',
    ].join('\n'),
  );
  const common = {
    ...(options.clusterSeeds
      ? { REDIS_CLUSTER_NODES: options.clusterSeeds.join(',') }
      : { REDIS_URL: redisUrl }),
    LOOPGATE_PREFIX: prefix,
    SLACK_BOT_TOKEN: TOKEN,
    SLACK_API_URL: slack.apiUrl,
    LOOPGATE_CONFIG: configPath,
    LOG_LEVEL: 'info',
  };
  const botPorts: number[] = [];
  const bots: LoopgateProcess[] = [];
  for (let i = 0; i < (options.bots ?? 1); i++) {
    const port = await freePort();
    botPorts.push(port);
    bots.push(
      spawnLoopgate(
        'bot',
        {
          ...common,
          SLACK_SIGNING_SECRET: TEST_SIGNING_SECRET,
          PORT: String(port),
          BOT_METRICS_PORT: String(await freePort()),
        },
        config.dir,
      ),
    );
  }
  const bot = bots[0]!;
  const workers: LoopgateProcess[] = [];
  const workerMetricsUrls: string[] = [];
  for (let i = 0; i < (options.workers ?? 1); i++) {
    const metricsPort = await freePort();
    workerMetricsUrls.push(`http://127.0.0.1:${metricsPort}/metrics`);
    workers.push(
      spawnLoopgate(
        'worker',
        {
          ...common,
          OPENAI_API_KEY: 'sk-storm',
          OPENAI_BASE_URL: openai.url,
          METRICS_PORT: String(metricsPort),
          ...options.workerEnv,
        },
        config.dir,
      ),
    );
  }
  const processes = [...bots, ...workers];
  const diagnostics = () =>
    processes
      .map((p) => {
        const worrying = p.logs().filter((l) => (typeof l.level === 'number' ? l.level >= 40 : false));
        return `${p.entry} ${p.pid}${p.exited() ? ' (exited)' : ''}: ${worrying.length} warnings\n  ${worrying
          .slice(-6)
          .map((l) => JSON.stringify(l).slice(0, 500))
          .join('\n  ')}${p.exited() ? `\n${p.stderr().slice(-2000)}` : ''}`;
      })
      .join('\n');
  const close = async () => {
    await killAllLoopgate();
    await Promise.allSettled([openai.close(), slack.close()]);
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close().catch(() => {});
    const admin = connections[0];
    if (admin) for (const pattern of [`${bare}:*`, `${prefix}:*`]) await deleteKeys(admin, pattern);
    for (const c of connections) c.disconnect();
    config.remove();
  };
  try {
    await Promise.all(
      processes.map((p) =>
        p.waitForLog(
          (l) => l.msg === 'loopgate bot started' || l.msg === 'worker started',
          'started',
          90_000,
        ),
      ),
    );
  } catch (error) {
    await close();
    throw error;
  }
  const workerNodePids = workers.map((w) => nodeChildOf(w.pid));
  const id: SlackIdentity = { teamId: slack.teamId, appId: slack.appId, botUserId: slack.botUserId };
  const botUrls = botPorts.map((port) => `http://127.0.0.1:${port}/slack/events`);
  const questions: StormQuestion[] = [];
  let lastPeak: number[] = workerNodePids.map(() => Number.NaN);

  // Read incrementally: this is polled while thousands of calls arrive, and must not load the fakes'
  // process (which would slow the fakes' answers, not loopgate).
  const byThread = new Map<string, number>();
  let scanned = 0;
  const answers = () => {
    for (; scanned < slack.calls.length; scanned++) {
      const call = slack.calls[scanned]!;
      if (call.response?.ok !== true) continue;
      if (call.method === 'chat.stopStream') {
        // An answer streamed: it counts once its stream stopped.
        const stream = slack.surfaces.streams.get(String(call.args.ts));
        if (stream && slack.surfaces.textOf(stream).includes(ANSWER) && !byThread.has(stream.threadTs))
          byThread.set(stream.threadTs, call.at);
        continue;
      }
      if (call.method !== 'chat.postMessage') continue;
      if (typeof call.args.thread_ts !== 'string' || typeof call.args.text !== 'string') continue;
      if (!call.args.text.includes(ANSWER)) continue;
      if (!byThread.has(call.args.thread_ts)) byThread.set(call.args.thread_ts, call.at);
    }
    return byThread;
  };

  return {
    slack,
    openai,
    queue,
    workers,
    workerMetricsUrls,
    bot,
    async ask(count, overMs) {
      const start = Date.now();
      const sends: Promise<void>[] = [];
      for (let i = 0; i < count; i++) {
        const due = start + (overMs * i) / count;
        const wait = due - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const index = questions.length;
        const user = `U0P${String(index).padStart(6, '0')}`;
        const channel = channelOf(index, channels);
        const written = slack.userMessage({
          channel,
          user,
          text: `<@${id.botUserId}> is the payments API down? [storm:${index}]`,
        });
        const question: StormQuestion = { index, threadTs: written.ts, sentAt: Date.now(), status: 0 };
        questions.push(question);
        const envelope = eventEnvelope(
          id,
          appMentionEvent(id, { channel, user, text: written.text, ts: written.ts }),
        );
        sends.push(
          postSigned(botUrls[index % botUrls.length]!, eventBody(envelope)).then(
            async (res) => {
              question.status = res.status;
              await res.arrayBuffer();
            },
            () => {
              question.status = -1;
            },
          ),
        );
      }
      await Promise.all(sends);
      return questions.slice(-count);
    },
    answeredCount: () => {
      const answered = answers();
      return questions.filter((q) => answered.has(q.threadTs)).length;
    },
    figures() {
      const answered = answers();
      const times = questions.flatMap((q) => {
        const at = answered.get(q.threadTs);
        return at === undefined ? [] : [at - q.sentAt];
      });
      const firstSentAt = questions[0]?.sentAt ?? Number.NaN;
      const lastAnswer = Math.max(...answered.values());
      const deleted = new Map<string, number>();
      let editsAfterDelete = 0;
      let editsNotFound = 0;
      for (const call of slack.calls) {
        const key = `${String(call.args.channel)}/${String(call.args.ts)}`;
        if (call.method === 'chat.delete' && call.response?.ok === true) deleted.set(key, call.at);
        if (call.method !== 'chat.update') continue;
        if (deleted.has(key)) editsAfterDelete++;
        if (call.response?.error === 'message_not_found') editsNotFound++;
      }
      const logs = workers.flatMap((w) => w.logs());
      const slackCalls = new Map<string, { calls: number; rateLimited: number }>();
      for (const call of slack.calls) {
        const entry = slackCalls.get(call.method) ?? { calls: 0, rateLimited: 0 };
        entry.calls++;
        if (call.status === 429) entry.rateLimited++;
        slackCalls.set(call.method, entry);
      }
      const cardLatencies: number[] = [];
      for (const q of questions) {
        const asked = gatedAt.get(String(q.index));
        if (asked === undefined) continue;
        const card = slack
          .callsOf('chat.postMessage')
          .find(
            (c) =>
              c.args.thread_ts === q.threadTs &&
              c.response?.ok === true &&
              JSON.stringify(c.args.blocks ?? '').includes('actions'),
          );
        if (card) cardLatencies.push(card.at - asked);
      }
      return {
        asked: questions.length,
        approvalsAsked: gatedAt.size,
        cardLatencies,
        slackCalls,
        answered: times.length,
        firstSentAt,
        timesToAnswer: times,
        lastAnswerAfterMs: answered.size === 0 ? Number.NaN : lastAnswer - firstSentAt,
        repeatedModelCalls: [...perStep.values()].reduce((sum, n) => sum + n - 1, 0),
        modelRequests: openai.requests.length,
        peakModelInFlight: peakInFlight,
        stalls: logs.filter((l) => /stalled/.test(l.msg)).length,
        lockRenewalFailures: logs.filter((l) => /renew/.test(JSON.stringify(l))).length,
        gateClosings: logs.filter((l) => l.msg.startsWith('busy: not taking new jobs')).length,
        editsAfterDelete,
        editsNotFound,
        peakRssBytes: lastPeak,
      };
    },
    timelines() {
      const answered = answers();
      const eyes = new Map<string, number>();
      for (const call of slack.callsOf('reactions.add')) {
        if (call.args.name === 'eyes') eyes.set(String(call.args.timestamp), call.at);
      }
      return questions.map((q) => [
        q.sentAt,
        eyes.get(q.threadTs) ?? Number.NaN,
        ...(modelTimes.get(String(q.index)) ?? []),
        answered.get(q.threadTs) ?? Number.NaN,
      ]);
    },
    workerPids: workerNodePids,
    cpuMs: () => ({ bot: cpuMsOf(nodeChildOf(bot.pid)), workers: workerNodePids.map(cpuMsOf) }),
    readPeakRss() {
      lastPeak = workerNodePids.map(peakRssOf);
      return lastPeak;
    },
    diagnostics,
    close,
  };
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return (
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN
  );
}
