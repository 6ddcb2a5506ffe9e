/**
 * One end-to-end world per test file: real Redis under a random prefix, the fake Slack Web API, the fake
 * OpenAI (routed per test by model-brains.ts), a local HTTP fixture for `http_get` (GET /status/…) and
 * `http_request` (anything under /deploy/…), a policy file, and loopgate's real processes: `npm run bot`
 * plus N × `npm run worker`, or `npm start` alone. Requests reach the bot signed exactly as Slack signs
 * them. `close()` kills the processes, stops the fakes and deletes the prefix's keys, whatever happened.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../../demo/lib/free-port.js';
import { createRedisConnection, type RedisClient } from '../../../src/queue/connection.js';
import { createRunsQueue, type RunsQueue } from '../../../src/queue/runs-queue.js';
import { ACTION_IDS, CALLBACK_IDS, REJECT_REASON_INPUT } from '../../../src/slack/ids.js';
import { runIdForEvent } from '../../../src/store/ids.js';
import type { LoadedRun } from '../../../src/store/runs/run-store.js';
import { createStore, type Store } from '../../../src/store/store.js';
import {
  type HttpFixture,
  type RecordedRequest,
  reply,
  startHttpFixture,
} from '../../fakes/http-fixtures.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../fakes/openai-server.js';
import type { AgentSurfaceOptions } from '../../fakes/slack-agent-surfaces.js';
import {
  type FakeSlack,
  type FakeUser,
  type RecordedCall,
  type StoredEphemeral,
  type StoredMessage,
  startFakeSlack,
} from '../../fakes/slack-api-server.js';
import {
  appMentionEvent,
  blockActionsPayload,
  type EventEnvelope,
  eventBody,
  eventEnvelope,
  interactivityBody,
  makeTriggerId,
  type PostSignedOptions,
  postSigned,
  type SlackIdentity,
  type SlackRequestBody,
  slashCommandBody,
  TEST_SIGNING_SECRET,
  threadReplyEvent,
  viewSubmissionPayload,
} from '../../fakes/slack-signing.js';
import { deleteKeys } from '../../store/redis-fixture.js';
import { killAllLoopgate, type LoopgateProcess, spawnLoopgate } from './loopgate-process.js';
import { type ModelRouter, routeModel } from './model-brains.js';
import { buttonOf, type Card, cardsIn } from './slack-view.js';
import { tempDir } from './temp-config.js';

/** `TempDir.write` for a directory the caller owns. */
const writeIn =
  (dir: string) =>
  (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const SLACK_TOKEN = 'xoxb-e2e-token';

/** The requester's time zone in their Slack profile. */
export const REQUESTER_TZ = 'Europe/Berlin';

/** People of the test workspace. */
export const PEOPLE = {
  /** Asks questions; approves nothing. */
  requester: 'U0ALICE',
  /** Approver of every gated tool (approvals.approvers and http_request's own list). */
  manager: 'U0MGR',
  /** User group allowed to decide http_request, with two members. */
  sreGroup: 'S0SRE',
  sreA: 'U0SREA',
  sreB: 'U0SREB',
  /** Nobody's approver. */
  stranger: 'U0MALLORY',
} as const;

export interface SlackWorldOptions {
  /** `split`: `npm run bot` and `workers` × `npm run worker`; `single`: `npm start`. */
  mode: 'split' | 'single';
  /** Worker processes in split mode; default 1. */
  workers?: number;
  /** Redis for every process and the world's own connections; default REDIS_URL (the shared one). */
  redisUrl?: string;
  /** YAML lines appended to the policy file (e.g. an `mcp:` section). */
  policyExtra?: readonly string[];
  /** YAML lines added under `approvals:` (indented two spaces, e.g. `  trusted: [http_request]`). */
  approvalsExtra?: readonly string[];
  /**
   * Seed nodes (`host:port`) of a Redis Cluster: the processes get REDIS_CLUSTER_NODES instead of
   * REDIS_URL, and the world's own store and queue connect to the cluster too.
   */
  clusterSeeds?: string[];
  /**
   * Also start a second fake OpenAI and name it in the policy as `model.fallbacks` (model
   * `fallback-model`, its own key variable), routed by `fallbackModel`.
   */
  fallback?: boolean;
  /** Extra environment of the worker processes (e.g. OPENAI_MAX_RETRIES). */
  workerEnv?: Record<string, string>;
  /**
   * Directory to write loopgate.yaml in, instead of a fresh temporary one: a project whose node_modules
   * holds a tool package that `custom:` names.
   */
  policyDir?: string;
  /** More people of the fake workspace (e.g. with the emails users.lookupByEmail finds). */
  slackUsers?: Record<string, Partial<FakeUser>>;
  /** Extra environment of every loopgate process, bot and workers (e.g. OTEL_EXPORTER_OTLP_ENDPOINT). */
  env?: Record<string, string>;
  /** `tools.http_request.timeoutSeconds`; default the tool's own. */
  httpRequestTimeoutSeconds?: number;
  /**
   * Slack's agent surfaces (SLACK_AGENT_SURFACES=auto) with the fake's stream and session methods, as
   * configured; default off (every run shows in its placeholder message).
   */
  agentSurfaces?: boolean | AgentSurfaceOptions;
}

/** A question as the bot received it. */
export interface Asked {
  eventId: string;
  runId: string;
  channel: string;
  /** The thread the run answers in (the question's ts for a new question). */
  threadTs: string;
  /** ts of the question itself. */
  ts: string;
  envelope: EventEnvelope;
}

export interface SlackWorld {
  prefix: string;
  slack: FakeSlack;
  openai: FakeOpenAI;
  model: ModelRouter;
  /** The fallback model's router, with `fallback: true`. */
  fallbackModel?: ModelRouter;
  fixture: HttpFixture;
  store: Store;
  queue: RunsQueue;
  id: SlackIdentity;
  /** Base URL of the process serving Slack (the bot, or `npm start`). */
  botUrl: string;
  /** /metrics of the bot (in single mode: of the whole process). */
  botMetricsUrl: string;
  /** /metrics of each worker process (split mode). */
  workerMetricsUrls: string[];
  processes: LoopgateProcess[];
  /** Starts another `npm run bot` (split mode) like the first one, on the same PORT (after it is gone). */
  startBot(): LoopgateProcess;
  /**
   * Stops every loopgate process (SIGTERM, waiting for each to exit) and starts them again with the same
   * environment and ports; resolves once they are started and the bot is ready again.
   */
  restartAll(): Promise<void>;
  /** A URL `http_get` may fetch; answers 200 with a JSON status. */
  statusUrl(name: string): string;
  /**
   * A URL `http_request` may write to; answers 200 `{ "deployed": true }`, except the first request to a
   * name starting with `hang-first-`, which gets no answer at all, and the first one to a name starting
   * with `503-first-`, answered 503, or with `slow-first-`, answered only after 10 s. (`statusUrl` names starting with `fail-twice-` answer 503 twice.)
   */
  deployUrl(name: string): string;
  /** Requests the fixture received for `url` (path and query). */
  hits(url: string): RecordedRequest[];
  /** A fresh channel id, so each test has a conversation of its own. */
  newChannel(): string;
  /** POSTs a signed request to /slack/events. */
  post(body: SlackRequestBody, options?: Omit<PostSignedOptions, keyof SlackRequestBody>): Promise<Response>;
  /** Writes the question in the fake Slack and delivers its app_mention; expects the bot's 200. */
  ask(channel: string, user: string, text: string): Promise<Asked>;
  /** Writes a reply in a thread (no mention) and delivers its message event; expects the bot's 200. */
  replyInThread(thread: { channel: string; threadTs: string }, user: string, text: string): Promise<Asked>;
  /** Clicks a button of a message in the fake Slack as `user`; returns the bot's answer. */
  click(message: StoredMessage, user: string, actionId: string, triggerId?: string): Promise<Response>;
  /** Clicks Reject on a card as `user` and returns the reason modal's private_metadata once it opened. */
  openRejectModal(card: Card, user: string): Promise<string>;
  /** Submits the reason modal (as opened by openRejectModal); returns the bot's answer. */
  submitRejectReason(user: string, privateMetadata: string, reason: string): Promise<Response>;
  /** Both of the above: Reject clicked, the reason given. */
  reject(card: Card, user: string, reason: string): Promise<Response>;
  /** Runs `/loopgate <text>`; returns the ephemeral reply (the command's ack body). */
  slash(channel: string, user: string, text: string): Promise<{ text: string; response_type: string }>;
  /** The card of a thread once posted and recorded (the first one, or the one of `approvalId`). */
  card(thread: { channel: string; threadTs: string }, approvalId?: string): Promise<Card>;
  message(card: Card): StoredMessage;
  /** The views.open call made for `triggerId`. */
  viewOpened(triggerId: string): Promise<RecordedCall>;
  ephemeralsTo(user: string, channel: string): StoredEphemeral[];
  /** Waits until the run has ended and its end was posted in the thread. */
  ended(runId: string, timeoutMs?: number): Promise<LoadedRun>;
  /** Polls `probe` until it returns a truthy value. */
  waitFor<T>(what: string, probe: () => T | Promise<T>, timeoutMs?: number): Promise<NonNullable<T>>;
  close(): Promise<void>;
}

interface PolicyYamlOptions {
  /** YAML lines appended at the end (e.g. an `mcp:` section). */
  extra?: readonly string[] | undefined;
  approvalsExtra?: readonly string[] | undefined;
  fallbackUrl?: string | undefined;
  httpRequestTimeoutSeconds?: number | undefined;
}

function policyYaml(
  fixtureUrl: string,
  { extra = [], approvalsExtra = [], fallbackUrl, httpRequestTimeoutSeconds }: PolicyYamlOptions = {},
): string {
  return [
    ...(fallbackUrl
      ? [
          'model:',
          '  fallbacks:',
          `    - { name: fallback-model, baseUrl: ${JSON.stringify(fallbackUrl)}, apiKeyEnv: FALLBACK_OPENAI_KEY }`,
        ]
      : []),
    'approvals:',
    `  approvers: [${PEOPLE.manager}]`,
    '  selfApproval: false',
    // The schema's minimum is 1 minute: the expiry test promotes the delayed expire job instead.
    '  expiresAfterMinutes: 30',
    ...approvalsExtra,
    'tools:',
    '  http_get:',
    '    allow:',
    `      - prefix: ${JSON.stringify(`${fixtureUrl}/status/`)}`,
    '        allowPrivate: true',
    '  http_request:',
    '    allow:',
    `      - prefix: ${JSON.stringify(`${fixtureUrl}/deploy/`)}`,
    '        allowPrivate: true',
    `    approvers: [${PEOPLE.manager}, ${PEOPLE.sreGroup}]`,
    ...(httpRequestTimeoutSeconds ? [`    timeoutSeconds: ${httpRequestTimeoutSeconds}`] : []),
    ...extra,
    '',
  ].join('\n');
}

async function poll<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs: number,
  diagnostics: () => string,
): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > until) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${diagnostics()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function startSlackWorld(options: SlackWorldOptions): Promise<SlackWorld> {
  const bare = `lg${randomBytes(5).toString('hex')}`;
  const prefix = `{${bare}}`;
  const connections: RedisClient[] = [];
  const redisUrl = options.redisUrl ?? REDIS_URL;
  const seeds = options.clusterSeeds;
  const redisEnv: Record<string, string> = seeds
    ? { REDIS_CLUSTER_NODES: seeds.join(',') }
    : { REDIS_URL: redisUrl };
  const connect = (role: 'store' | 'producer') => {
    const c = seeds
      ? createRedisConnection(
          {
            kind: 'cluster',
            nodes: seeds.map((seed) => ({ host: '127.0.0.1', port: Number(seed.split(':')[1]) })),
            tls: false,
          },
          role,
          { connectionName: `lge2e-${bare}` },
        )
      : createRedisConnection(redisUrl, role, { connectionName: `lge2e-${bare}` });
    // A test that stops Redis on purpose sees these fail; its assertions are on the processes.
    c.on('error', () => {});
    connections.push(c);
    return c;
  };
  const store = createStore(connect('store'), { prefix });
  const queue = createRunsQueue(connect('producer'), prefix);
  queue.on('error', () => {});
  const config = tempDir();
  const processes: LoopgateProcess[] = [];
  let openai: FakeOpenAI | undefined;
  let fallbackOpenai: FakeOpenAI | undefined;
  let slack: FakeSlack | undefined;
  let fixture: HttpFixture | undefined;

  const close = async () => {
    await killAllLoopgate();
    await Promise.allSettled([openai?.close(), fallbackOpenai?.close(), slack?.close(), fixture?.close()]);
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close().catch(() => {});
    const admin = connections[0];
    if (admin) {
      for (const pattern of [`${bare}:*`, `${prefix}:*`]) await deleteKeys(admin, pattern);
    }
    for (const c of connections) c.disconnect();
    config.remove();
  };

  try {
    openai = await startFakeOpenAI();
    slack = await startFakeSlack({
      token: SLACK_TOKEN,
      groups: { [PEOPLE.sreGroup]: [PEOPLE.sreA, PEOPLE.sreB] },
      users: { [PEOPLE.requester]: { tz: REQUESTER_TZ }, ...options.slackUsers },
      ...(typeof options.agentSurfaces === 'object' ? { agentSurfaces: options.agentSurfaces } : {}),
    });
    fixture = await startHttpFixture(async (req, res) => {
      if (req.method === 'GET' && req.path.startsWith('/status/')) {
        const hits = fixture?.requests.filter((r) => r.path === req.path).length ?? 0;
        if (req.path.startsWith('/status/fail-twice-') && hits <= 2) {
          reply(res, 503, 'text/plain', 'warming up');
          return;
        }
        reply(res, 200, 'application/json', '{"status":"all systems operational"}');
      } else if (req.path.startsWith('/deploy/')) {
        // `/deploy/hang-first-…`: the first request is never answered (the test kills its worker mid-call).
        const hits = fixture?.requests.filter((r) => r.path === req.path).length ?? 0;
        if (req.path.startsWith('/deploy/hang-first-') && hits === 1) {
          await new Promise((resolve) => res.once('close', resolve));
          return;
        }
        // `/deploy/slow-first-…`: the first request is answered only after 10 s (past a short timeout).
        if (req.path.startsWith('/deploy/slow-first-') && hits === 1) {
          await new Promise((resolve) => setTimeout(resolve, 10_000));
          if (!res.destroyed) reply(res, 200, 'application/json', '{"deployed":true}');
          return;
        }
        if (req.path.startsWith('/deploy/503-first-') && hits === 1) {
          reply(res, 503, 'application/json', '{"error":"deployer busy"}');
          return;
        }
        reply(res, 200, 'application/json', '{"deployed":true}');
      } else {
        reply(res, 404, 'text/plain', 'not found');
      }
    });
    const model = routeModel(openai);
    if (options.fallback) fallbackOpenai = await startFakeOpenAI();
    const fallbackModel = fallbackOpenai ? routeModel(fallbackOpenai) : undefined;
    const configPath = (options.policyDir ? writeIn(options.policyDir) : config.write)(
      'loopgate.yaml',
      policyYaml(fixture.url, {
        extra: options.policyExtra,
        approvalsExtra: options.approvalsExtra,
        fallbackUrl: fallbackOpenai?.url,
        httpRequestTimeoutSeconds: options.httpRequestTimeoutSeconds,
      }),
    );
    const common = {
      ...redisEnv,
      LOOPGATE_PREFIX: prefix,
      SLACK_BOT_TOKEN: SLACK_TOKEN,
      SLACK_API_URL: slack.apiUrl,
      LOOPGATE_CONFIG: configPath,
      WORKER_LOCK_MS: '2000',
      SLACK_AGENT_SURFACES: options.agentSurfaces ? 'auto' : 'off',
      LOG_LEVEL: 'info',
      // The policy names it, so every process checks it exists.
      ...(fallbackOpenai ? { FALLBACK_OPENAI_KEY: 'sk-fallback' } : {}),
      ...options.env,
    };
    const botPort = await freePort();
    const botProbesPort = await freePort();
    const botSide = { SLACK_SIGNING_SECRET: TEST_SIGNING_SECRET, BOT_METRICS_PORT: String(botProbesPort) };
    const botEnv = { ...common, ...botSide, PORT: String(botPort) };
    const workerSide = {
      OPENAI_API_KEY: 'sk-e2e',
      OPENAI_BASE_URL: openai.url,
      ...options.workerEnv,
    };
    const workerMetricsUrls: string[] = [];
    const launches: Array<() => LoopgateProcess> = [];
    if (options.mode === 'single') {
      launches.push(() =>
        spawnLoopgate('single', { ...common, ...botSide, ...workerSide, PORT: String(botPort) }, config.dir),
      );
    } else {
      launches.push(() => spawnLoopgate('bot', botEnv, config.dir));
      for (let i = 0; i < (options.workers ?? 1); i++) {
        const metricsPort = await freePort();
        workerMetricsUrls.push(`http://127.0.0.1:${metricsPort}/metrics`);
        launches.push(() =>
          spawnLoopgate(
            'worker',
            { ...common, ...workerSide, METRICS_PORT: String(metricsPort) },
            config.dir,
          ),
        );
      }
    }
    processes.push(...launches.map((launch) => launch()));
    const botUrl = `http://127.0.0.1:${botPort}`;
    const botProbesUrl = `http://127.0.0.1:${botProbesPort}`;
    const fakeSlack = slack;
    const fakeFixture = fixture;
    const id: SlackIdentity = { teamId: slack.teamId, appId: slack.appId, botUserId: slack.botUserId };
    const diagnostics = () =>
      processes
        .map((p) => {
          const worrying = p
            .logs()
            .filter((l) =>
              typeof l.level === 'number' ? l.level >= 40 : l.level !== 'info' && l.level !== 'debug',
            );
          return `${p.entry} ${p.pid}${p.exited() ? ' (exited)' : ''}: ${worrying
            .slice(-8)
            .map((l) => JSON.stringify(l).slice(0, 600))
            .join('\n  ')}`;
        })
        .join('\n');
    const waitFor = <T>(what: string, probe: () => T | Promise<T>, timeoutMs = 30_000) =>
      poll(what, probe, timeoutMs, diagnostics);

    // Started: each process says so, and the bot is ready (Redis answers and a worker takes jobs).
    const started = async (running: readonly LoopgateProcess[]) => {
      await Promise.all(
        running.map((p) =>
          p.waitForLog(
            (l) => l.msg === 'loopgate bot started' || l.msg === 'worker started',
            'started',
            60_000,
          ),
        ),
      );
      if (options.mode === 'single') {
        await running[0]?.waitForLog((l) => l.msg === 'worker started', 'worker started', 60_000);
      }
      await waitFor(
        'the bot to be ready (/readyz 200)',
        () =>
          fetch(`${botProbesUrl}/readyz`).then(
            (r) => r.status === 200,
            () => false,
          ),
        30_000,
      );
    };
    await started(processes);
    const restartAll = async () => {
      const old = processes.splice(0);
      for (const p of old) p.signal('SIGTERM');
      await Promise.all(old.map((p) => p.exit));
      const fresh = launches.map((launch) => launch());
      processes.push(...fresh);
      await started(fresh);
    };
    let channels = 0;

    const post: SlackWorld['post'] = (body, extra = {}) =>
      postSigned(`${botUrl}/slack/events`, { ...body, ...extra });
    const expectOk = async (res: Response, what: string) => {
      if (res.status !== 200) throw new Error(`${what}: the bot answered ${res.status} ${await res.text()}`);
    };
    const deliver = async (event: ReturnType<typeof appMentionEvent>, what: string) => {
      const envelope = eventEnvelope(id, event);
      await expectOk(await post(eventBody(envelope)), what);
      const threadTs = String(event.thread_ts ?? event.ts);
      return {
        eventId: envelope.event_id,
        runId: runIdForEvent(envelope.event_id),
        channel: String(event.channel),
        threadTs,
        ts: String(event.ts),
        envelope,
      };
    };
    const message = (card: Card): StoredMessage => {
      const found = fakeSlack.message(card.channel, card.ts);
      if (!found) throw new Error(`card ${card.ts} is gone from ${card.channel}`);
      return found;
    };
    const click: SlackWorld['click'] = async (target, user, actionId, triggerId = makeTriggerId()) => {
      const value = buttonOf(target, actionId)?.value;
      if (value === undefined) throw new Error(`no ${actionId} button on message ${target.ts}`);
      const payload = blockActionsPayload(id, {
        user,
        channel: target.channel,
        messageTs: target.ts,
        ...(target.thread_ts ? { threadTs: target.thread_ts } : {}),
        action: { actionId, value },
        message: { text: target.text, blocks: target.blocks ?? [] },
        triggerId,
      });
      return post(interactivityBody(payload));
    };
    const viewOpened = (triggerId: string) =>
      fakeSlack.waitForCall('views.open', (c) => c.args.trigger_id === triggerId, 15_000);

    const openRejectModal = async (card: Card, user: string) => {
      const triggerId = makeTriggerId();
      await expectOk(await click(message(card), user, ACTION_IDS.reject, triggerId), 'reject click');
      const opened = await viewOpened(triggerId);
      const view = opened.args.view as { callback_id?: string; private_metadata?: string };
      if (view.callback_id !== CALLBACK_IDS.rejectReason || view.private_metadata === undefined) {
        throw new Error(`Reject opened another view: ${JSON.stringify(view).slice(0, 300)}`);
      }
      return view.private_metadata;
    };
    const submitRejectReason = (user: string, privateMetadata: string, reason: string) => {
      const payload = viewSubmissionPayload(id, {
        user,
        callbackId: CALLBACK_IDS.rejectReason,
        privateMetadata,
        values: {
          [REJECT_REASON_INPUT.blockId]: {
            [REJECT_REASON_INPUT.actionId]: { type: 'plain_text_input', value: reason },
          },
        },
      });
      return post(interactivityBody(payload));
    };

    return {
      prefix,
      slack: fakeSlack,
      openai,
      model,
      ...(fallbackModel ? { fallbackModel } : {}),
      fixture: fakeFixture,
      store,
      queue,
      id,
      botUrl,
      botMetricsUrl: `${botProbesUrl}/metrics`,
      workerMetricsUrls,
      processes,
      startBot() {
        const bot = spawnLoopgate('bot', botEnv, config.dir);
        processes.push(bot);
        return bot;
      },
      restartAll,
      statusUrl: (name) => `${fakeFixture.url}/status/${name}`,
      deployUrl: (name) => `${fakeFixture.url}/deploy/${name}`,
      hits: (url) => {
        const path = new URL(url).pathname + new URL(url).search;
        return fakeFixture.requests.filter((r) => r.path === path);
      },
      newChannel: () => `C0E2E${++channels}${randomBytes(3).toString('hex').toUpperCase()}`,
      post,
      async ask(channel, user, text) {
        const question = fakeSlack.userMessage({ channel, user, text: `<@${id.botUserId}> ${text}` });
        return deliver(
          appMentionEvent(id, { channel, user, text: question.text, ts: question.ts }),
          'mention',
        );
      },
      async replyInThread(thread, user, text) {
        const written = fakeSlack.userMessage({
          channel: thread.channel,
          user,
          text,
          threadTs: thread.threadTs,
        });
        return deliver(
          threadReplyEvent(id, {
            channel: thread.channel,
            user,
            text,
            ts: written.ts,
            threadTs: thread.threadTs,
          }),
          'thread reply',
        );
      },
      click,
      openRejectModal,
      submitRejectReason,
      reject: async (card, user, reason) =>
        submitRejectReason(user, await openRejectModal(card, user), reason),
      async slash(channel, user, text) {
        const res = await post(slashCommandBody(id, { user, channel, text }));
        await expectOk(res, `/loopgate ${text}`);
        return (await res.json()) as { text: string; response_type: string };
      },
      // Slack shows the card a moment before the worker records where it is; a click in between is
      // refused ("still being set up"), so a card counts as posted once its approval knows it.
      card: (thread, approvalId) =>
        waitFor(`an approval card in ${thread.channel}/${thread.threadTs}`, async () => {
          const card = cardsIn(fakeSlack.thread(thread.channel, thread.threadTs)).find(
            (c) => approvalId === undefined || c.approvalId === approvalId,
          );
          if (!card) return undefined;
          const recorded = (await store.approvals.get(card.approvalId))?.card;
          return recorded?.channel === card.channel && recorded.ts === card.ts ? card : undefined;
        }),
      message,
      viewOpened,
      ephemeralsTo: (user, channel) => fakeSlack.ephemerals(channel).filter((e) => e.user === user),
      ended: (runId, timeoutMs = 30_000) =>
        waitFor(
          `run ${runId} to end and be posted`,
          async () => {
            const run = await store.runs.loadRun(runId);
            return run && run.answerTs !== null ? run : null;
          },
          timeoutMs,
        ),
      waitFor,
      close,
    };
  } catch (error) {
    const output = processes.map((p) => p.output()).join('\n');
    await close();
    throw new Error(`the end-to-end world did not start: ${String(error)}\n${output}`);
  }
}
