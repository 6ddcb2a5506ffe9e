/**
 * The bot built in-process (createBotApp on a free port) against the fake Slack Web API and the real Redis
 * under a random prefix, with helpers to send requests signed as Slack signs them and to set up runs and
 * pending approvals directly through the store.
 */
import { randomBytes } from 'node:crypto';
import { webApi } from '@slack/bolt';
import type { Job } from 'bullmq';
import { Redis } from 'ioredis';
import { type BotApp, createBotApp, EVENTS_PATH } from '../../src/bot/app.js';
import { type Policy, parsePolicy } from '../../src/config/policy.js';
import { approversFor } from '../../src/config/policy-limits.js';
import { createLogger } from '../../src/log/logger.js';
import type { GatedCall } from '../../src/loop/gated-calls.js';
import type { Clock } from '../../src/loop/ports.js';
import type { RunState } from '../../src/loop/run-state.js';
import { createRun } from '../../src/loop/state.js';
import { createRedisConnection, createRunsQueue, type RunsQueue } from '../../src/queue/index.js';
import { approvalCard } from '../../src/slack/approval-card.js';
import { approvalViewFromRecord } from '../../src/slack/approval-view.js';
import type { ApprovalPolicyFields, NewApproval } from '../../src/store/approvals/approval-store.js';
import { type ApprovalRecord, createStore, type Store, type StoreOptions } from '../../src/store/index.js';
import { type FakeSlack, type FakeSlackOptions, startFakeSlack } from '../fakes/slack-api-server.js';
import {
  appMentionEvent,
  type BlockActionInput,
  blockActionsPayload,
  eventBody,
  eventEnvelope,
  interactivityBody,
  type MessageInput,
  type PostSignedOptions,
  postSigned,
  type SlackEvent,
  type SlackIdentity,
  type SlackRequestBody,
  slashCommandBody,
  TEST_SIGNING_SECRET,
} from '../fakes/slack-signing.js';
import { type FakeSocketMode, startFakeSocketMode } from '../fakes/slack-socket-mode.js';
import { deleteKeys } from '../store/redis-fixture.js';

export const REDIS_URL = 'redis://127.0.0.1:6379';
export const CHANNEL = 'C0OPS';
export const REQUESTER = 'U0ALICE';
export const MANAGER = 'U0MANAGER';
export const STRANGER = 'U0STRANGER';
export const GROUP = 'S0SRE';
export const GROUPIE = 'U0GROUPIE';
const HOUR = 3_600_000;
const APP_TOKEN = 'xapp-1-A0APP0001-fake';

/** Alice asks and is also a default approver (so self-approval is tested); S0SRE holds one member. */
export const DEFAULT_POLICY = `
approvals:
  approvers: [${MANAGER}, ${REQUESTER}, ${GROUP}]
  selfApproval: false
  expiresAfterMinutes: 60
tools:
  post_message: { channels: [${CHANNEL}], approvers: [U0COMMS] }
`;

export interface BotFixtureOptions {
  policyYaml?: string;
  fake?: FakeSlackOptions;
  /** Resume jobs: default 20, 40, 80 and 160 ms, so a queue failure is given up on within about 300 ms. */
  enqueueRetryDelaysMs?: number[];
  /** How long a question may wait for its start job to be queued (default the bot's own, 2.5 s). */
  queueDeadlineMs?: number;
  /** Socket Mode (SLACK_APP_TOKEN set) against a fake Socket Mode endpoint instead of HTTP. */
  socketMode?: boolean;
  /** Store options beyond the prefix (e.g. `waitReplicas`). */
  store?: Omit<StoreOptions, 'prefix'>;
  /** The bot's clock, also the creation time of `pendingApproval`s; default the system clock. */
  clock?: Clock;
}

export interface PendingApproval {
  runId: string;
  approvalId: string;
  record: ApprovalRecord;
  threadTs: string;
  cardTs: string;
}

export interface BotFixture {
  fake: FakeSlack;
  id: SlackIdentity;
  policy: Policy;
  store: Store;
  redis: Redis;
  queue: RunsQueue;
  bot: BotApp;
  /** With `socketMode`: the WebSocket endpoint the bot connected to. */
  socket?: FakeSocketMode;
  /** `http://127.0.0.1:<port>` (HTTP mode) */
  base: string;
  prefix: string;
  post(body: SlackRequestBody, opts?: Omit<PostSignedOptions, 'body' | 'contentType'>): Promise<Response>;
  /**
   * Signs and posts an event envelope, then waits until the bot's background work on it is done (notes
   * to the person); returns the response and the envelope's event id.
   */
  sendEvent(
    event: SlackEvent,
    opts?: { eventId?: string; retryNum?: number },
  ): Promise<{ res: Response; eventId: string }>;
  mention(input: Omit<MessageInput, 'text'> & { text?: string }): Promise<{ res: Response; eventId: string }>;
  click(input: BlockActionInput): Promise<Response>;
  command(user: string, text: string, channel?: string): Promise<Response>;
  /** Jobs waiting in the runs queue (no worker runs in these tests). */
  jobs(): Promise<Job[]>;
  /** A thread where loopgate answered before: one finished run's question and answer in its history. */
  threadWithHistory(channel?: string): Promise<string>;
  /** A run awaiting approval of one http_request call, with its card posted (by the bot user) in its thread. */
  pendingApproval(opts?: {
    requester?: string;
    tool?: string;
    expiresInMs?: number;
    channel?: string;
    /** The gated call's arguments (default: a restart of payments). */
    args?: unknown;
    /** What a policy rule adds (quorum, grant offer, schema…). */
    policy?: ApprovalPolicyFields;
    /** Who may decide; default the tool's approvers in the policy. */
    approvers?: { users: string[]; groups: string[] };
    /** Stored decided already (e.g. a shadow call: `{ status: 'rejected', via: 'shadow', reason }`). */
    decided?: NewApproval['decided'];
    /** The tool's plan shown with the call (a tool with `plan`). */
    plan?: GatedCall['plan'];
  }): Promise<PendingApproval>;
  cleanup(): Promise<void>;
}

export async function startBotFixture(options: BotFixtureOptions = {}): Promise<BotFixture> {
  const prefix = `lgtest-${randomBytes(6).toString('hex')}`;
  const socket = options.socketMode
    ? await startFakeSocketMode(options.fake?.appId ?? 'A0APP0001')
    : undefined;
  const fake = await startFakeSlack({
    groups: { [GROUP]: [GROUPIE] },
    channelMembers: { [CHANNEL]: [REQUESTER, MANAGER, GROUPIE, STRANGER, 'U0COMMS'] },
    ...(socket ? { socketMode: { appToken: APP_TOKEN, url: socket.url } } : {}),
    ...options.fake,
  });
  const id: SlackIdentity = { teamId: fake.teamId, appId: fake.appId, botUserId: fake.botUserId };
  const policy = parsePolicy(options.policyYaml ?? DEFAULT_POLICY, { env: {}, source: 'test policy' });
  const redis = new Redis(REDIS_URL);
  const producer = createRedisConnection(REDIS_URL, 'producer');
  const store = createStore(redis, {
    prefix: `{${prefix}}`,
    maxQueuedPerThread: policy.inbound.maxQueuedPerThread,
    ...options.store,
  });
  const queue = createRunsQueue(producer, `{${prefix}}`);
  const bot = await createBotApp({
    env: {
      SLACK_BOT_TOKEN: fake.token,
      SLACK_SIGNING_SECRET: TEST_SIGNING_SECRET,
      SLACK_APP_TOKEN: socket ? APP_TOKEN : undefined,
      SLACK_API_URL: fake.apiUrl,
      PORT: 0,
    },
    policy,
    store,
    queue,
    logger: createLogger({ level: 'silent' }),
    enqueueRetryDelaysMs: options.enqueueRetryDelaysMs ?? [20, 40, 80, 160],
    ...(options.queueDeadlineMs === undefined ? {} : { queueDeadlineMs: options.queueDeadlineMs }),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const { port } = await bot.start(0);
  await socket?.connected();
  const base = `http://127.0.0.1:${port}`;
  const slack = new webApi.WebClient(fake.token, {
    slackApiUrl: fake.apiUrl,
    logLevel: webApi.LogLevel.ERROR,
  });

  const post: BotFixture['post'] = (body, opts = {}) =>
    postSigned(`${base}${EVENTS_PATH}`, { ...body, ...opts });
  const sendEvent: BotFixture['sendEvent'] = async (event, opts = {}) => {
    const envelope = eventEnvelope(id, event, opts.eventId ? { eventId: opts.eventId } : {});
    const res = await post(
      eventBody(envelope),
      opts.retryNum === undefined ? {} : { retryNum: opts.retryNum },
    );
    await bot.idle();
    return { res, eventId: envelope.event_id };
  };

  const fixture: BotFixture = {
    fake,
    id,
    policy,
    store,
    redis,
    queue,
    bot,
    ...(socket ? { socket } : {}),
    base,
    prefix,
    post,
    sendEvent,
    mention: (input) =>
      sendEvent(
        appMentionEvent(id, { ...input, text: input.text ?? `<@${fake.botUserId}> is payments healthy?` }),
      ),
    click: (input) => post(interactivityBody(blockActionsPayload(id, input))),
    command: (user, text, channel = CHANNEL) => post(slashCommandBody(id, { user, channel, text })),
    jobs: () => queue.getWaiting(0, 1000),
    async threadWithHistory(channel = CHANNEL) {
      const threadTs = fake.userMessage({ channel, user: REQUESTER, text: 'is payments healthy?' }).ts;
      const thread = { teamId: fake.teamId, channelId: channel, threadTs };
      const runId = `r-${randomBytes(5).toString('hex')}`;
      await store.threads.claim(thread, runId, { runId });
      await store.threads.release(thread, runId, [
        { role: 'user', content: 'is payments healthy?' },
        { role: 'assistant', content: 'Yes: the error rate is 0.1 %.' },
      ]);
      return threadTs;
    },
    async pendingApproval(opts = {}) {
      const requester = opts.requester ?? REQUESTER;
      const channel = opts.channel ?? CHANNEL;
      const tool = opts.tool ?? 'http_request';
      const runId = `r-${randomBytes(5).toString('hex')}`;
      const question = fake.userMessage({ channel, user: requester, text: 'restart payments please' });
      const threadTs = question.ts;
      const now = options.clock?.now() ?? Date.now();
      const call: GatedCall = {
        toolCallId: 'call_1',
        tool,
        effect: 'write',
        args: opts.args ?? { method: 'POST', url: 'https://deploy.internal.example/api/restart/payments' },
        argsHash: 'a'.repeat(64),
        reason: 'payments is failing its health checks',
        idempotent: false,
        ...(opts.plan ? { plan: opts.plan } : {}),
      };
      const state: RunState = awaitingApproval(
        createRun({
          runId,
          requester: { userId: requester, teamId: fake.teamId },
          systemPrompt: 'You are loopgate.',
          question: 'restart payments please',
          now,
        }),
        call,
      );
      await store.runs.createRun(state, {
        teamId: fake.teamId,
        channelId: channel,
        threadTs,
        requestMessageTs: threadTs,
      });
      await store.threads.claim({ teamId: fake.teamId, channelId: channel, threadTs }, runId, { runId });
      const lease = await store.leases.acquire(runId, 'test-worker', 30_000);
      if (!lease.acquired) throw new Error('lease not acquired');
      const [created] = await store.approvals.createApprovals({
        runId,
        fence: lease.fence,
        requester,
        now,
        approvals: [
          {
            call,
            approvers: opts.approvers ?? approversFor(policy, tool),
            expiresAt: now + (opts.expiresInMs ?? HOUR),
            ...(opts.policy ? { policy: opts.policy } : {}),
            ...(opts.decided ? { decided: opts.decided } : {}),
          },
        ],
      });
      if (!created) throw new Error('approval not created');
      const posted = await slack.chat.postMessage({
        channel,
        thread_ts: threadTs,
        ...approvalCard(approvalViewFromRecord(created)),
      });
      const cardTs = String(posted.ts);
      await store.approvals.setCard(created.approvalId, { channel, ts: cardTs });
      await store.leases.release(runId, lease.fence);
      const record = await store.approvals.get(created.approvalId);
      if (!record) throw new Error('approval vanished');
      return { runId, approvalId: created.approvalId, record, threadTs, cardTs };
    },
    async cleanup() {
      await bot.stop();
      await queue.obliterate({ force: true });
      await queue.close();
      await deleteKeys(redis, `${prefix}:*`);
      await Promise.all([redis.quit(), producer.quit()]);
      await fake.close();
      await socket?.close();
    },
  };
  return fixture;
}

/** The state after the model asked for `call`: one assistant message with the call, the turn waiting. */
function awaitingApproval(state: RunState, call: GatedCall): RunState {
  return {
    ...state,
    status: 'awaiting_approval',
    stopReason: null,
    stopMessage: null,
    step: 1,
    messages: [
      ...state.messages,
      {
        role: 'assistant',
        content: call.reason ?? null,
        toolCalls: [{ id: call.toolCallId, name: call.tool, arguments: JSON.stringify(call.args) }],
      },
    ],
    turn: { slots: [{ toolCallId: call.toolCallId, tool: call.tool, result: null }], pending: [call] },
  };
}
