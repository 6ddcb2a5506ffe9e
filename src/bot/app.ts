/**
 * The Bolt app: receives Slack's events, clicks, modal submissions and slash commands, and turns them into
 * jobs and decisions. HTTP mode serves `POST /slack/events` (all three kinds) and `GET /healthz` on PORT;
 * Socket Mode is used instead when SLACK_APP_TOKEN is set (`/healthz` then stays on PORT). `/readyz` and
 * `/metrics` are not served here but on the internal BOT_METRICS_PORT (start.ts). Listeners only parse, check, enqueue or decide, and ack; the logic lives in the modules they call.
 *
 * Events are acked once handled: a question's event only once its start job is in Redis (Bolt's automatic
 * ack is held back by ack-after-processing.ts), within Slack's 3-second budget; an event whose job could
 * not be queued is answered 500 (Socket Mode: not acked), so Slack delivers it again. Clicks are acked
 * first thing; the work that follows (deciding, queueing the resume, Slack API calls) runs as tracked
 * background tasks, so tests can wait for it and shutdown drains it. A click whose decision could not be
 * recorded is told so in an ephemeral message. Modal submissions and slash commands are acked once their
 * result is known (Redis work, and Slack permalinks waited for at most a second).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  App,
  HTTPReceiver,
  type Receiver,
  type ReceiverProcessEventErrorHandlerArgs,
  SocketModeReceiver,
} from '@slack/bolt';
import { createGroupMembers } from '../approvers/groups.js';
import { processRoster } from '../approvers/oncall/build.js';
import type { Env } from '../config/env.js';
import type { Policy } from '../config/policy.js';
import type { Logger } from '../log/logger.js';
import type { Clock } from '../loop/ports.js';
import { listenError } from '../metrics/http.js';
import { type Metrics, slackBudgetMetrics } from '../metrics/metrics.js';
import type { RunsQueue } from '../queue/index.js';
import { createChannelFacts } from '../slack/channel-facts.js';
import { shareRetryAfter } from '../slack/rate/share-retry-after.js';
import { SlackBudget } from '../slack/rate/slack-budget.js';
import type { Store } from '../store/index.js';
import type { RunTracer } from '../telemetry/run-tracer.js';
import { AckAfterProcessingReceiver } from './ack-after-processing.js';
import { createBackground } from './background.js';
import { boltLevelOf, boltLogger } from './bolt-logger.js';
import type { BotContext } from './context.js';
import { livenessRoute } from './health.js';
import { createJobBatcher } from './job-batcher.js';
import { registerListeners } from './listeners.js';
import { botSlack } from './slack-calls.js';

export const EVENTS_PATH = '/slack/events';

type BotEnv = Pick<
  Env<'bot'>,
  'SLACK_BOT_TOKEN' | 'SLACK_SIGNING_SECRET' | 'SLACK_APP_TOKEN' | 'SLACK_API_URL' | 'PORT'
>;

interface BotAppDeps {
  env: BotEnv;
  policy: Policy;
  /** The run store (createStore over a `store` connection). */
  store: Store;
  /** The runs queue on a `producer` connection. */
  queue: RunsQueue;
  logger: Logger;
  /** OpenTelemetry traces; absent: off. */
  telemetry?: RunTracer;
  /** Default: the system clock. */
  clock?: Clock;
  /**
   * The bot's ids, when known; otherwise Bolt asks Slack (auth.test) while the app is created, which also
   * proves the token works.
   */
  identity?: { botId: string; botUserId: string };
  /** Where on-call tokens and provider URLs are read (PAGERDUTY_API_URL, …). Default process.env. */
  oncallEnv?: Readonly<Record<string, string | undefined>>;
  /** How long user group members are cached (usergroups.users.list). Default 5 minutes. */
  groupCacheTtlMs?: number;
  /**
   * Waits between attempts to queue a resume job while Redis fails (the decision is recorded already).
   * Default about 30 s in all: 0.1, 0.25, 0.5, 1, 2, 4, 8 and 15 s.
   */
  enqueueRetryDelaysMs?: readonly number[];
  /** How long a question's event may wait for its start job to be queued before Slack is answered 500. */
  queueDeadlineMs?: number;
  /** Decisions are counted in it (served on /metrics by start.ts). */
  metrics?: Metrics;
}

const ENQUEUE_RETRY_DELAYS_MS = [100, 250, 500, 1_000, 2_000, 4_000, 8_000, 15_000];

export interface BotApp {
  app: App;
  mode: 'http' | 'socket';
  /**
   * Starts receiving. HTTP mode listens on `port` (default PORT; 0 picks a free one) and resolves with the
   * port it got and its server; Socket Mode connects to Slack and serves `/healthz` on PORT. A port in
   * use is a ConfigError naming PORT.
   */
  start(port?: number): Promise<{ port: number; server?: Server }>;
  /** Stops receiving, then waits up to `timeoutMs` (default 5 s) for tasks already started. */
  stop(timeoutMs?: number): Promise<void>;
  /** Resolves once no background task is running (tests wait on it before asserting). */
  idle(): Promise<void>;
}

/** Client retries: a few, with backoff, so a Slack hiccup delays a card update but never hangs shutdown. */
const CLIENT_OPTIONS = {
  rejectRateLimitedCalls: false,
  retryConfig: { retries: 4, factor: 2, minTimeout: 500, maxTimeout: 10_000, randomize: true },
  timeout: 15_000,
} as const;

/**
 * Over HTTP, a request whose processing failed is answered 500 (Slack redelivers an event so answered)
 * and counts as answered, so Bolt's 3-second timer does not report it again.
 */
async function answer500(args: ReceiverProcessEventErrorHandlerArgs): Promise<boolean> {
  if (args.response.headersSent) return false;
  args.response.writeHead(500);
  args.response.end();
  return true;
}

function createReceiver(deps: BotAppDeps, log: ReturnType<typeof boltLogger>): Receiver {
  const customRoutes = [livenessRoute];
  const logLevel = boltLevelOf(deps.logger.level);
  if (deps.env.SLACK_APP_TOKEN) {
    return new SocketModeReceiver({
      appToken: deps.env.SLACK_APP_TOKEN,
      customRoutes,
      // apps.connections.open goes to SLACK_API_URL too (GovSlack, a proxy, or a test's fake Slack).
      installerOptions: { port: deps.env.PORT, clientOptions: { slackApiUrl: deps.env.SLACK_API_URL } },
      logger: log,
      logLevel,
    });
  }
  return new HTTPReceiver({
    signingSecret: deps.env.SLACK_SIGNING_SECRET,
    endpoints: [EVENTS_PATH],
    customRoutes,
    logger: log,
    logLevel,
    processEventErrorHandler: answer500,
  });
}

export async function createBotApp(deps: BotAppDeps): Promise<BotApp> {
  const log = boltLogger(deps.logger);
  const receiver = createReceiver(deps, log);
  const app = new App({
    token: deps.env.SLACK_BOT_TOKEN,
    receiver: new AckAfterProcessingReceiver(receiver),
    logger: log,
    logLevel: boltLevelOf(deps.logger.level),
    clientOptions: { ...CLIENT_OPTIONS, slackApiUrl: deps.env.SLACK_API_URL },
    convoStore: false,
    deferInitialization: true,
    ...(deps.identity
      ? { botId: deps.identity.botId, botUserId: deps.identity.botUserId, tokenVerificationEnabled: false }
      : {}),
  });
  await app.init();

  const clock = deps.clock ?? { now: () => Date.now() };
  // The same Slack rate budget as the workers' (Redis): cards first, 429s shared.
  const budget = new SlackBudget({
    store: deps.store.slackBudget,
    logger: deps.logger,
    limits: deps.policy.slack.rateLimits,
    metrics: slackBudgetMetrics(() => deps.metrics),
  });
  shareRetryAfter(app.client, budget);
  const slack = botSlack(app.client, budget);
  const background = createBackground(deps.logger);
  const ctx: BotContext = {
    policy: deps.policy,
    store: deps.store,
    queue: deps.queue,
    starts: createJobBatcher(deps.queue),
    slack,
    groups: createGroupMembers({ lookup: slack.groupMembers, clock, ttlMs: deps.groupCacheTtlMs }),
    ...(deps.policy.channels.rules.length > 0 && {
      channelFacts: createChannelFacts({
        info: slack.channelInfo,
        clock,
        ttlMs: deps.policy.approvals.oncallCacheSeconds * 1_000,
        onFailure: (channel, err) =>
          deps.logger.warn({ channel, err }, 'channel facts unknown: approvals there fail closed'),
      }),
    }),
    oncall: processRoster({
      policy: deps.policy,
      store: deps.store,
      env: deps.oncallEnv ?? process.env,
      lookupByEmail: slack.lookupByEmail,
      logger: deps.logger,
    }),
    clock,
    logger: deps.logger,
    background,
    enqueueRetryDelaysMs: deps.enqueueRetryDelaysMs ?? ENQUEUE_RETRY_DELAYS_MS,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    ...(deps.telemetry ? { telemetry: deps.telemetry } : {}),
  };
  registerListeners(app, ctx, deps.queueDeadlineMs);

  return {
    app,
    mode: receiver instanceof SocketModeReceiver ? 'socket' : 'http',
    async start(port = deps.env.PORT) {
      try {
        if (receiver instanceof HTTPReceiver) {
          const server: Server = await receiver.start(port);
          return { port: (server.address() as AddressInfo).port, server };
        }
        await receiver.start();
        return { port: deps.env.PORT };
      } catch (err) {
        throw listenError(err, 'PORT', port);
      }
    },
    async stop(timeoutMs = 5_000) {
      await receiver.stop();
      if (!(await background.drain(timeoutMs))) {
        deps.logger.warn({ timeoutMs }, 'bot stopped with background tasks still running');
      }
    },
    idle: background.idle,
  };
}
