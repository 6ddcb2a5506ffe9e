import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createGroupMembers } from '../../src/approvers/groups.js';
import { createBotApp } from '../../src/bot/app.js';
import { mayDecide } from '../../src/bot/approvers.js';
import { createBackground } from '../../src/bot/background.js';
import { botReadiness } from '../../src/bot/health.js';
import { classifyMessage, stripBotMention } from '../../src/bot/inbound.js';
import { withRetries } from '../../src/bot/retry.js';
import type { MessageEvent } from '../../src/bot/slack-payloads.js';
import { ConfigError } from '../../src/config/errors.js';
import { parsePolicy } from '../../src/config/policy.js';
import { approversFor } from '../../src/config/policy-limits.js';
import { createLogger } from '../../src/log/logger.js';
import { runChecks } from '../../src/metrics/http.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createRedisConnection, createRunsQueue } from '../../src/queue/index.js';
import { timingsFromTrace } from '../../src/slack/trace.js';
import { createStore } from '../../src/store/index.js';
import { TEST_SIGNING_SECRET } from '../fakes/slack-signing.js';
import { REDIS_URL } from './bot-fixture.js';

const BOT = 'UBOT0001';
const event = (fields: Partial<MessageEvent>): MessageEvent => ({
  type: 'message',
  channel: 'C0OPS',
  user: 'U0ALICE',
  text: 'hello',
  ts: '1767000000.000200',
  ...fields,
});

describe('classifyMessage', () => {
  it('takes mentions, DMs and thread replies with the right kind and thread', () => {
    expect(classifyMessage(event({ type: 'app_mention', text: `<@${BOT}> hi` }), BOT)).toMatchObject({
      take: true,
      kind: 'mention',
      threadTs: '1767000000.000200',
      inThread: false,
      text: 'hi',
    });
    expect(classifyMessage(event({ channel: 'D0A', channel_type: 'im' }), BOT)).toMatchObject({
      take: true,
      kind: 'dm',
    });
    expect(classifyMessage(event({ thread_ts: '1767000000.000100' }), BOT)).toMatchObject({
      take: true,
      kind: 'thread_reply',
      threadTs: '1767000000.000100',
      inThread: true,
    });
    expect(classifyMessage(event({ thread_ts: '1.1', subtype: 'thread_broadcast' }), BOT)).toMatchObject({
      take: true,
    });
  });

  it('ignores bots, itself, edits, other subtypes, plain channel chatter and mentions seen as messages', () => {
    const ignored = [
      event({ bot_id: 'B1', thread_ts: '1.1' }),
      event({ user: BOT, thread_ts: '1.1' }),
      event({ subtype: 'message_changed', thread_ts: '1.1' }),
      event({ subtype: 'channel_join', thread_ts: '1.1' }),
      event({ edited: { ts: '1.2' }, thread_ts: '1.1' }),
      event({ user: undefined, thread_ts: '1.1' }),
      event({}),
      event({ thread_ts: '1.1', text: `<@${BOT}> again` }),
      event({ type: 'app_mention', channel: 'D0A', text: `<@${BOT}> hi` }),
      // A thread's parent message carries thread_ts equal to its own ts: not a reply.
      event({ thread_ts: '1767000000.000200' }),
    ];
    for (const e of ignored) expect(classifyMessage(e, BOT).take).toBe(false);
  });

  it('strips every mention of the bot, with or without a label, and nothing else', () => {
    expect(stripBotMention(`<@${BOT}> ask <@U0BOB> about <@${BOT}|loopgate> it`, BOT)).toBe(
      'ask <@U0BOB> about it',
    );
    expect(stripBotMention(`<@${BOT}>`, BOT)).toBe('');
    expect(stripBotMention('line one\nline two', BOT)).toBe('line one\nline two');
  });
});

describe('approvers', () => {
  const policy = parsePolicy(
    'approvals: { approvers: [U0MGR, S0SRE] }\ntools: { post_message: { channels: [C0OPS], approvers: [U0COMMS] } }',
    {
      env: {},
    },
  );

  it('caches group members for the TTL and shares one lookup between concurrent checks', async () => {
    let now = 0;
    const lookups: string[] = [];
    const groups = createGroupMembers({
      clock: { now: () => now },
      ttlMs: 1_000,
      lookup: async (id) => {
        lookups.push(id);
        return ['U0A'];
      },
    });
    expect(await Promise.all([groups.has('S1', 'U0A'), groups.has('S1', 'U0B')])).toEqual([true, false]);
    now = 999;
    await groups.has('S1', 'U0A');
    expect(lookups).toEqual(['S1']);
    now = 1_000;
    await groups.has('S1', 'U0A');
    expect(lookups).toEqual(['S1', 'S1']);
  });

  it("uses the approval's own approvers (the tool's, as the policy set them), and refuses self-approval but not self-rejection", async () => {
    const groups = createGroupMembers({ clock: { now: () => 0 }, lookup: async () => ['U0SRE'] });
    const asked = (tool: string, requester: string) => ({
      tool,
      requester,
      approvers: approversFor(policy, tool),
    });
    const call = asked('post_message', 'U0ALICE');
    expect(await mayDecide(policy, call, 'U0COMMS', 'approve', { groups })).toEqual({ ok: true });
    expect(await mayDecide(policy, call, 'U0MGR', 'approve', { groups })).toEqual({
      ok: false,
      reason: 'not_approver',
    });
    const http = asked('http_request', 'U0MGR');
    // A rule's selfApproval and approvers, stored on the approval, win over the policy's.
    expect(await mayDecide(policy, { ...http, selfApproval: true }, 'U0MGR', 'approve', { groups })).toEqual({
      ok: true,
    });
    const leadsOnly = { ...http, approvers: { users: ['U0LEAD'], groups: [] } };
    expect(await mayDecide(policy, leadsOnly, 'U0SRE', 'approve', { groups })).toEqual({
      ok: false,
      reason: 'not_approver',
    });
    expect(await mayDecide(policy, http, 'U0SRE', 'approve', { groups })).toEqual({ ok: true });
    expect(await mayDecide(policy, http, 'U0MGR', 'approve', { groups })).toEqual({
      ok: false,
      reason: 'self_approval',
    });
    expect(await mayDecide(policy, http, 'U0MGR', 'reject', { groups })).toEqual({ ok: true });
  });
});

describe('background tasks', () => {
  it('idle waits for tasks and the tasks they start; a failure is logged, not thrown', async () => {
    const background = createBackground(createLogger({ level: 'silent' }));
    const done: string[] = [];
    background.run('outer', async () => {
      await new Promise((r) => setTimeout(r, 10));
      background.run('inner', async () => {
        await new Promise((r) => setTimeout(r, 10));
        done.push('inner');
      });
      done.push('outer');
    });
    background.run('failing', async () => {
      throw new Error('boom');
    });
    await background.idle();
    expect(done).toEqual(['outer', 'inner']);
    background.run('slow', () => new Promise((r) => setTimeout(r, 200)));
    expect(await background.drain(10)).toBe(false);
    expect(await background.drain(1_000)).toBe(true);
  });
});

describe('withRetries', () => {
  it('retries once per delay and returns the first success', async () => {
    let calls = 0;
    const retries: number[] = [];
    const value = await withRetries(
      async () => {
        calls += 1;
        if (calls < 3) throw new Error(`fail ${calls}`);
        return 'queued';
      },
      { delaysMs: [1, 1, 1, 1], onRetry: (_err, retry) => retries.push(retry) },
    );
    expect(value).toBe('queued');
    expect(calls).toBe(3);
    expect(retries).toEqual([1, 2]);
  });

  it('rethrows the last failure once the delays are used up', async () => {
    let calls = 0;
    await expect(
      withRetries(
        async () => {
          calls += 1;
          throw new Error(`fail ${calls}`);
        },
        { delaysMs: [1, 1] },
      ),
    ).rejects.toThrow('fail 3');
  });

  it('does not retry an error marked as not retryable', async () => {
    let calls = 0;
    await expect(
      withRetries(
        async () => {
          calls += 1;
          throw new TypeError('bad data');
        },
        { delaysMs: [1, 1], retryable: (err) => !(err instanceof TypeError) },
      ),
    ).rejects.toThrow('bad data');
    expect(calls).toBe(1);
  });
});

describe('timingsFromTrace', () => {
  it('reads step and tool durations and effects from engine events, skipping anything else', () => {
    expect(
      timingsFromTrace([
        { type: 'model_replied', at: 1, step: 1, durationMs: 900, model: 'gpt-fallback' },
        { type: 'tool_started', at: 2, toolCallId: 'c1', effect: 'read' },
        { type: 'tool_finished', at: 3, toolCallId: 'c1', effect: 'read', durationMs: 40 },
        { type: 'tool_started', at: 4, toolCallId: 'c2', effect: 'write' },
        { type: 'slack_posted', at: 5 },
        { type: 'model_replied', at: 6, step: 'two' },
      ]),
    ).toEqual({
      steps: { 1: 900 },
      tools: { c1: 40 },
      effects: { c1: 'read', c2: 'write' },
      models: { 1: 'gpt-fallback' },
      descriptions: {},
      compactions: {},
    });
  });
});

describe('probes', () => {
  it('the public PORT answers /healthz without Redis, and 404 on /readyz and /metrics', async () => {
    const redis = new Redis(REDIS_URL);
    const producer = createRedisConnection(REDIS_URL, 'producer');
    const queue = createRunsQueue(producer, '{lgtest-readyz}');
    const bot = await createBotApp({
      env: {
        SLACK_BOT_TOKEN: 'xoxb-unused',
        SLACK_SIGNING_SECRET: TEST_SIGNING_SECRET,
        SLACK_APP_TOKEN: undefined,
        SLACK_API_URL: 'http://127.0.0.1:9/api/',
        PORT: 0,
      },
      policy: parsePolicy('{}', { env: {} }),
      store: createStore(redis, { prefix: '{lgtest-readyz}' }),
      queue,
      logger: createLogger({ level: 'silent' }),
      identity: { botId: 'B1', botUserId: BOT },
      metrics: createMetrics({}, { defaultMetrics: false }),
    });
    try {
      const { port } = await bot.start(0);
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ ok: true });
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(404);
      expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(404);
      expect((await fetch(`http://127.0.0.1:${port}/nope`)).status).toBe(404);
      expect(bot.mode).toBe('http');
    } finally {
      await bot.stop();
      await queue.close();
      await Promise.all([redis.quit(), producer.quit()]);
    }
  });

  it('a PORT already in use is a ConfigError naming PORT', async () => {
    const redis = new Redis(REDIS_URL);
    const producer = createRedisConnection(REDIS_URL, 'producer');
    const queue = createRunsQueue(producer, '{lgtest-port}');
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, resolve));
    const port = (taken.address() as AddressInfo).port;
    const bot = await createBotApp({
      env: {
        SLACK_BOT_TOKEN: 'xoxb-unused',
        SLACK_SIGNING_SECRET: TEST_SIGNING_SECRET,
        SLACK_APP_TOKEN: undefined,
        SLACK_API_URL: 'http://127.0.0.1:9/api/',
        PORT: port,
      },
      policy: parsePolicy('{}', { env: {} }),
      store: createStore(redis, { prefix: '{lgtest-port}' }),
      queue,
      logger: createLogger({ level: 'silent' }),
      identity: { botId: 'B1', botUserId: BOT },
    });
    try {
      const started = bot.start();
      await expect(started).rejects.toBeInstanceOf(ConfigError);
      await expect(started).rejects.toThrow(`PORT: port ${port} is already in use (set PORT to a free port)`);
    } finally {
      taken.close();
      await queue.close();
      producer.disconnect();
      await redis.quit();
    }
  });

  it('readiness is Redis answering and a worker connected; 503 names what failed', async () => {
    const up = { ping: async () => 'PONG' };
    const down = { ping: () => Promise.reject(new Error('connection refused')) };
    const workers = (n: number) => ({ getWorkersCount: async () => n });
    expect(await runChecks(botReadiness([up, up], workers(1)))).toEqual({
      ok: true,
      checks: { redis: true, workers: true },
    });
    expect(await runChecks(botReadiness([up, down], workers(0)))).toEqual({
      ok: false,
      checks: { redis: false, workers: false },
    });
  });

  it('Socket Mode is chosen when SLACK_APP_TOKEN is set', async () => {
    const redis = new Redis(REDIS_URL);
    const producer = createRedisConnection(REDIS_URL, 'producer');
    const queue = createRunsQueue(producer, '{lgtest-socket}');
    try {
      const bot = await createBotApp({
        env: {
          SLACK_BOT_TOKEN: 'xoxb-unused',
          SLACK_SIGNING_SECRET: TEST_SIGNING_SECRET,
          SLACK_APP_TOKEN: 'xapp-1-unused',
          SLACK_API_URL: 'http://127.0.0.1:9/api/',
          PORT: 0,
        },
        policy: parsePolicy('{}', { env: {} }),
        store: createStore(redis, { prefix: '{lgtest-socket}' }),
        queue,
        logger: createLogger({ level: 'silent' }),
        identity: { botId: 'B1', botUserId: BOT },
      });
      expect(bot.mode).toBe('socket');
    } finally {
      await queue.close();
      producer.disconnect();
      await redis.quit();
    }
  });
});
