/**
 * Ack latency of `POST /slack/events` under a burst (issue 4). The bot is built in-process against the
 * fake Slack Web API and the local Redis; a second process (this file run with `--client`) plays Slack
 * and sends bursts of 200 signed `app_mention` requests at once, over connections opened beforehand (as
 * Slack keeps its connections alive). The bot acks an event once its signature is checked and its start
 * job is in Redis (jobs arriving together go out in one batch); the run ends by checking that every mention
 * was queued once.
 *
 * Printed per round: the latency Slack sees (p50 / p99 / max, request sent to response received), the
 * bot's own handling time (request parsed to response written, from the server's side), and how many got
 * 200. Goal: p99 <= 20 ms, all 200. At the end: every mention must be exactly one queued job.
 *
 * First, the same client against a bare Node HTTP server that answers 200 at once: the floor that this
 * machine and this harness (client and server sharing the CPU) put under any figure.
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  Agent,
  createServer,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { createBotApp, EVENTS_PATH } from '../src/bot/app.js';
import { parsePolicy } from '../src/config/policy.js';
import { createLogger } from '../src/log/logger.js';
import { createRedisConnection, createRunsQueue } from '../src/queue/index.js';
import { createStore } from '../src/store/index.js';
import { startFakeSlack } from '../test/fakes/slack-api-server.js';
import {
  appMentionEvent,
  eventBody,
  eventEnvelope,
  type SlackIdentity,
  signedHeaders,
  TEST_SIGNING_SECRET,
} from '../test/fakes/slack-signing.js';

const BURST = 200;
const ROUNDS = 5;

interface ClientConfig {
  url: string;
  id: SlackIdentity;
}
interface RoundResult {
  ms: number[];
  ok: number;
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}
const figures = (ms: readonly number[]) =>
  `p50 ${percentile(ms, 50).toFixed(1)} ms  p99 ${percentile(ms, 99).toFixed(1)} ms  max ${percentile(ms, 100).toFixed(1)} ms`;

let people = 0;

/** The Slack side: one burst of signed mentions on kept-alive connections, timing each answer. */
async function burst(config: ClientConfig, agent: Agent, size: number): Promise<RoundResult> {
  const bodies = Array.from({ length: size }, (_, i) => {
    const event = appMentionEvent(config.id, {
      channel: 'C0BENCH',
      // A different person per mention: one person's burst would be refused by the per-user rate limit
      // (inbound.perUserPerMinute) with an ephemeral, which is another path than the ack of a question.
      user: `U0B${String(++people).padStart(7, '0')}`,
      text: `<@${config.id.botUserId}> question ${i}`,
    });
    return eventBody(eventEnvelope(config.id, event)).body;
  });
  const results = await Promise.all(
    bodies.map(async (body) => {
      const headers = { 'content-type': 'application/json', ...signedHeaders(TEST_SIGNING_SECRET, body) };
      const started = performance.now();
      const status = await post(config.url, agent, headers, body);
      return { ms: performance.now() - started, status };
    }),
  );
  return { ms: results.map((r) => r.ms), ok: results.filter((r) => r.status === 200).length };
}

/** POSTs `body` on the agent's kept-alive connections; resolves with the status once the answer is read. */
function post(url: string, agent: Agent, headers: Record<string, string>, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', reject);
    req.end(body);
  });
}

async function runClient(): Promise<void> {
  const config = await new Promise<ClientConfig>((resolve) =>
    process.once('message', (m) => resolve(m as ClientConfig)),
  );
  const agent = new Agent({ keepAlive: true, maxSockets: BURST });
  // Two warm-up bursts: open every connection and let both processes' JIT settle.
  await burst(config, agent, BURST);
  await burst(config, agent, BURST);
  for (let round = 1; round <= ROUNDS; round++) {
    process.send?.({ round, ...(await burst(config, agent, BURST)) });
  }
  agent.destroy();
  process.send?.({ done: true, sent: (ROUNDS + 2) * BURST });
}

/** Server-side handling time of each request: parsed by Node's HTTP server to response written. */
function timeRequests(server: Server): number[] {
  const handled: number[] = [];
  server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now();
    res.once('finish', () => handled.push(performance.now() - started));
  });
  return handled;
}

type RoundReport = RoundResult & { round: number };

/** Plays Slack from a second process against `url`; reports each measured round; resolves with how many were sent. */
function playSlack(config: ClientConfig, onRound: (round: RoundReport) => void): Promise<number> {
  const client = fork(fileURLToPath(import.meta.url), ['--client'], { execArgv: ['--import', 'tsx'] });
  client.send(config);
  return new Promise<number>((resolve, reject) => {
    client.on('message', (m: Partial<RoundReport> & { done?: boolean; sent?: number }) => {
      if (m.done) resolve(m.sent ?? 0);
      else onRound({ round: m.round ?? 0, ms: m.ms ?? [], ok: m.ok ?? 0 });
    });
    client.on('exit', (code) => (code === 0 ? undefined : reject(new Error(`client exited ${code}`))));
  });
}

async function runBaseline(id: SlackIdentity): Promise<void> {
  const server = createServer((req, res) => {
    req.resume();
    req.once('end', () => res.writeHead(200).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${EVENTS_PATH}`;
  console.log(`bare Node server, same client (the floor of this harness on this machine):`);
  await playSlack({ url, id }, (r) =>
    console.log(`  round ${r.round}: Slack sees ${figures(r.ms)}  |  200 OK ${r.ok}/${BURST}`),
  );
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

async function runBench(): Promise<void> {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = `lgbench-${randomBytes(6).toString('hex')}`;
  const fake = await startFakeSlack();
  const id: SlackIdentity = { teamId: fake.teamId, appId: fake.appId, botUserId: fake.botUserId };
  const redis = new Redis(redisUrl);
  const producer = createRedisConnection(redisUrl, 'producer');
  const queue = createRunsQueue(producer, `{${prefix}}`);
  const bot = await createBotApp({
    env: {
      SLACK_BOT_TOKEN: fake.token,
      SLACK_SIGNING_SECRET: TEST_SIGNING_SECRET,
      SLACK_APP_TOKEN: undefined,
      SLACK_API_URL: fake.apiUrl,
      PORT: 0,
    },
    policy: parsePolicy('{}', { env: {} }),
    store: createStore(redis, { prefix: `{${prefix}}` }),
    queue,
    logger: createLogger({ level: 'silent' }),
  });
  try {
    await runBaseline(id);
    const { port, server } = await bot.start(0);
    if (!server) throw new Error('the bot has no HTTP server');
    const handled = timeRequests(server);
    console.log(`bot: bursts of ${BURST} concurrent signed app_mention requests, ${ROUNDS} rounds`);
    const sent = await playSlack({ url: `http://127.0.0.1:${port}${EVENTS_PATH}`, id }, (r) => {
      const serverSide = handled.splice(0).slice(-BURST);
      console.log(
        `  round ${r.round}: Slack sees ${figures(r.ms)}  |  bot handles ${figures(serverSide)}  |  200 OK ${r.ok}/${BURST}`,
      );
    });
    await bot.idle();
    const queued = await queue.getWaitingCount();
    console.log(
      `  start jobs queued: ${queued} for ${sent} mentions${queued === sent ? '' : '  (MISMATCH)'}`,
    );
    if (queued !== sent) process.exitCode = 1;
  } finally {
    await bot.stop();
    await queue.obliterate({ force: true });
    await queue.close();
    await Promise.all([redis.quit(), producer.quit()]);
    await fake.close();
  }
}

if (process.argv.includes('--client')) await runClient();
else await runBench();
