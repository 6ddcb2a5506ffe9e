/**
 * Start-up and outage errors as a person meets them, from the real processes (`npm run bot`,
 * `npm run worker`, `npm start`): every required variable in one round, a refused Slack token named,
 * Redis unreachable as one JSON line per back-off step naming REDIS_URL, never a raw stack on stderr, and
 * an empty shell variable not hiding `.env`'s value.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../demo/lib/free-port.js';
import { killAllLoopgate, type LogLine, spawnLoopgate } from '../e2e/support/loopgate-process.js';
import { type FakeSlack, startFakeSlack } from '../fakes/slack-api-server.js';
import { deleteKeys } from '../store/redis-fixture.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DOWN = 'redis://127.0.0.1:1';

let slack: FakeSlack;
let dir: string;
const prefix = `startup-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  slack = await startFakeSlack();
  dir = mkdtempSync(join(tmpdir(), 'loopgate-startup-'));
  writeFileSync(
    join(dir, 'loopgate.yaml'),
    'approvals: { approvers: [U0ALICE] }\ntools: { current_time: {} }\n',
  );
});
afterEach(async () => {
  await killAllLoopgate();
});
afterAll(async () => {
  await slack?.close();
  const redis = new Redis(REDIS_URL);
  await deleteKeys(redis, `*${prefix}*`).finally(() => redis.disconnect());
  rmSync(dir, { recursive: true, force: true });
});

const base = async () => ({
  SLACK_API_URL: slack.apiUrl,
  SLACK_SIGNING_SECRET: 'signing-secret',
  OPENAI_API_KEY: 'sk-fake',
  OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
  LOOPGATE_CONFIG: './loopgate.yaml',
  LOOPGATE_PREFIX: `{${prefix}}`,
  PORT: String(await freePort()),
  BOT_METRICS_PORT: '0',
  METRICS_PORT: '0',
});

/** Every non-empty stderr line parses as a JSON object. */
const nonJsonLines = (stderr: string) =>
  stderr.split('\n').filter((line) => {
    if (line.trim() === '') return false;
    try {
      return typeof JSON.parse(line) !== 'object';
    } catch {
      return true;
    }
  });

describe('start-up errors a person can act on', { timeout: 90_000 }, () => {
  it('npm start reports every missing variable of the bot and the worker in one round', async () => {
    const single = spawnLoopgate(
      'single',
      { LOOPGATE_CONFIG: './loopgate.yaml', SLACK_API_URL: slack.apiUrl },
      dir,
    );
    const exit = await single.exit;
    expect(exit.code).toBe(1);
    expect(single.stderr()).toBe(
      [
        'loopgate: invalid configuration in environment:',
        '  SLACK_BOT_TOKEN: required (a bot token starting with xoxb-)',
        "  SLACK_SIGNING_SECRET: required (the Slack app's signing secret)",
        '  OPENAI_API_KEY: required (the API key of the OpenAI-compatible server)',
        '',
      ].join('\n'),
    );
    expect(single.logs()).toEqual([]);
  });

  it('a token Slack refuses: one fatal JSON line naming SLACK_BOT_TOKEN, no stack, nothing on stderr', async () => {
    const bot = spawnLoopgate('bot', { ...(await base()), SLACK_BOT_TOKEN: 'xoxb-wrong', REDIS_URL }, dir);
    const exit = await bot.exit;
    expect(exit.code).toBe(1);
    const fatal = bot.logs().filter((l) => l.level === 'fatal');
    expect(fatal).toHaveLength(1);
    expect(fatal[0]?.msg).toBe(
      "Slack refused SLACK_BOT_TOKEN (invalid_auth): set it to the Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions page",
    );
    expect(fatal[0]?.variable).toBe('SLACK_BOT_TOKEN');
    expect(JSON.stringify(fatal[0])).not.toContain('stack');
    expect(bot.stderr()).toBe('');
  });

  it('an app-level token Slack refuses (Socket Mode): one fatal JSON line naming SLACK_APP_TOKEN', async () => {
    const socket = await startFakeSlack({
      socketMode: { appToken: 'xapp-1-right', url: () => 'ws://127.0.0.1:9/' },
    });
    try {
      const bot = spawnLoopgate(
        'bot',
        {
          ...(await base()),
          SLACK_API_URL: socket.apiUrl,
          SLACK_BOT_TOKEN: socket.token,
          SLACK_APP_TOKEN: 'xapp-1-wrong',
          REDIS_URL,
        },
        dir,
      );
      const exit = await bot.exit;
      expect(exit.code, bot.output()).toBe(1);
      const fatal = bot.logs().filter((l) => l.level === 'fatal');
      expect(fatal.map((l) => l.msg)).toEqual([
        "Slack refused SLACK_APP_TOKEN (invalid_auth): set it to an app-level token (xapp-…) with connections:write from the app's Basic Information page, with Socket Mode on",
      ]);
      expect(nonJsonLines(bot.stderr())).toEqual([]);
    } finally {
      await socket.close();
    }
  });

  for (const entry of ['bot', 'worker'] as const) {
    it(`Redis down: the ${entry} logs one JSON line per back-off step naming REDIS_URL, stderr only JSON`, async () => {
      const probePort = await freePort();
      const proc = spawnLoopgate(
        entry,
        {
          ...(await base()),
          SLACK_BOT_TOKEN: slack.token,
          REDIS_URL: DOWN,
          BOT_METRICS_PORT: String(probePort),
        },
        dir,
      );
      const outage = (l: LogLine) => l.msg.startsWith('Redis unreachable');
      await proc.waitForLog((l) => outage(l) && l.attempt === 4, 'the fourth back-off step', 45_000);
      const steps = proc.logs().filter(outage);
      expect(steps.map((l) => l.attempt)).toEqual([1, 2, 3, 4]);
      for (const step of steps) {
        expect(step.level).toBe('error');
        expect(step.variable).toBe('REDIS_URL');
        expect(step.msg).toBe(
          `Redis unreachable: Redis at ${DOWN} (connect ECONNREFUSED 127.0.0.1:1); check REDIS_URL; retrying in ${String(step.retryInMs)} ms`,
        );
      }
      // No other line a second about the same outage.
      expect(proc.logs().filter((l) => /redis|queue error|worker error/i.test(l.msg) && !outage(l))).toEqual(
        [],
      );
      expect(nonJsonLines(proc.stderr())).toEqual([]);
      expect(proc.stderr()).not.toContain('Unhandled error event');
      // The bot's /readyz says why, in words naming the variable, not only which check failed.
      if (entry !== 'bot') return; // a worker serves its probes once Redis has answered
      let ready: Response | undefined;
      for (const until = Date.now() + 40_000; ready === undefined && Date.now() < until; ) {
        ready = await fetch(`http://127.0.0.1:${probePort}/readyz`).catch(
          () => new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 200)),
        );
      }
      if (ready === undefined) throw new Error(`/readyz never answered:\n${proc.output()}`);
      expect(ready.status).toBe(503);
      const body = (await ready.json()) as { why: string[] };
      expect(body.why).toContain(
        'redis: Redis does not answer (check REDIS_URL and that Redis is up); events cannot be queued',
      );
    });
  }

  it('an empty shell variable does not hide the value .env gives it', async () => {
    const own = mkdtempSync(join(tmpdir(), 'loopgate-startup-env-'));
    try {
      writeFileSync(
        join(own, 'loopgate.yaml'),
        'approvals: { approvers: [U0ALICE] }\ntools: { current_time: {} }\n',
      );
      writeFileSync(join(own, '.env'), `SLACK_BOT_TOKEN=${slack.token}\n`);
      const bot = spawnLoopgate('bot', { ...(await base()), SLACK_BOT_TOKEN: '', REDIS_URL }, own);
      await bot.waitForLog((l) => l.msg === 'loopgate bot started', 'the bot to start', 45_000);
      expect(bot.stderr()).toBe('');
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });
});
