/** The real process (`src/bot/main.ts`, as `npm run bot` starts it) against the fake Slack and real Redis. */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../demo/lib/free-port.js';
import { createRedisConnection, createRunsQueue, startJobId } from '../../src/queue/index.js';
import { createStore } from '../../src/store/index.js';
import { type FakeSlack, startFakeSlack } from '../fakes/slack-api-server.js';
import {
  appMentionEvent,
  eventBody,
  eventEnvelope,
  postSigned,
  TEST_SIGNING_SECRET,
} from '../fakes/slack-signing.js';
import { deleteKeys } from '../store/redis-fixture.js';
import { REDIS_URL } from './bot-fixture.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
// Node with tsx's loader, not the tsx CLI, whose signal relay SIGKILLs a child slow to acknowledge (exit 143).
const tsxLoader = pathToFileURL(join(repoRoot, 'node_modules/tsx/dist/loader.mjs')).href;
const entry = join(repoRoot, 'src/bot/main.ts');

interface Started {
  child: ChildProcess;
  stdout: string[];
  stderr: string[];
  exited: Promise<number | null>;
}

function startProcess(env: Record<string, string>, cwd: string): Started {
  const child = spawn(process.execPath, ['--import', tsxLoader, entry], {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, stdout, stderr, exited };
}

async function waitForHealth(base: string, started: Started, timeoutMs = 45_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (started.child.exitCode !== null) {
      throw new Error(
        `bot exited ${started.child.exitCode}: ${started.stderr.join('')}${started.stdout.join('')}`,
      );
    }
    const ok = await fetch(`${base}/healthz`).then(
      (res) => res.status === 200,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`bot did not become healthy: ${started.stderr.join('')}`);
}

async function waitFor<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 5_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > until) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

let fake: FakeSlack;
let cwd: string;
let prefix: string;
let running: Started | undefined;
beforeAll(async () => {
  fake = await startFakeSlack();
  cwd = mkdtempSync(join(tmpdir(), 'loopgate-bot-'));
  writeFileSync(join(cwd, 'loopgate.yaml'), 'approvals: { approvers: [U0MANAGER] }\n');
});
afterAll(async () => {
  await fake.close();
  rmSync(cwd, { recursive: true, force: true });
});
afterEach(async () => {
  if (running && running.child.exitCode === null) {
    running.child.kill('SIGKILL');
    await running.exited;
  }
  running = undefined;
});

// Each test starts a real process through tsx; slow on a loaded machine.
describe('npm run bot (src/bot/main.ts)', { timeout: 60_000 }, () => {
  it('serves /healthz on PORT, /readyz and /metrics on BOT_METRICS_PORT only, takes a signed mention into the queue, and exits 0 on SIGTERM', async () => {
    prefix = `lgtest-${randomBytes(6).toString('hex')}`;
    const port = await freePort();
    const metricsPort = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const internal = `http://127.0.0.1:${metricsPort}`;
    running = startProcess(
      {
        SLACK_BOT_TOKEN: fake.token,
        SLACK_SIGNING_SECRET: TEST_SIGNING_SECRET,
        SLACK_API_URL: fake.apiUrl,
        PORT: String(port),
        BOT_METRICS_PORT: String(metricsPort),
        REDIS_URL,
        LOOPGATE_PREFIX: `{${prefix}}`,
        LOOPGATE_CONFIG: join(cwd, 'loopgate.yaml'),
        LOG_LEVEL: 'info',
      },
      cwd,
    );
    const producer = createRedisConnection(REDIS_URL, 'producer');
    const queue = createRunsQueue(producer, `{${prefix}}`);
    const redis = new Redis(REDIS_URL);
    try {
      await waitForHealth(base, running);
      const health = await fetch(`${base}/healthz`);
      expect(await health.json()).toEqual({ ok: true });
      // Not on the public port.
      expect((await fetch(`${base}/readyz`)).status).toBe(404);
      expect((await fetch(`${base}/metrics`)).status).toBe(404);
      expect(await (await fetch(`${internal}/healthz`)).json()).toEqual({ ok: true });
      expect(await (await fetch(`${internal}/metrics`)).text()).toContain('loopgate_approvals_decided_total');
      // Redis answers, but no worker takes jobs yet: not ready, and it says why.
      const ready = await fetch(`${internal}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({
        ok: false,
        checks: { redis: true, workers: false },
        workersWithoutMetrics: [],
      });
      // A worker whose METRICS_PORT was taken says so through Redis; the bot's /readyz lists it.
      const notices = createStore(redis, { prefix: `{${prefix}}` }).workerNotices;
      await notices.noMetrics({ host: 'host-a', pid: 4242, port: 9091 });
      const listed = (await (await fetch(`${internal}/readyz`)).json()) as { workersWithoutMetrics: unknown };
      expect(listed.workersWithoutMetrics).toEqual([
        { host: 'host-a', pid: 4242, port: 9091, seenAt: expect.any(String) },
      ]);
      // Bolt asked Slack who the bot is, on the fake.
      expect(fake.callsOf('auth.test').length).toBeGreaterThan(0);

      const id = { teamId: fake.teamId, appId: fake.appId, botUserId: fake.botUserId };
      const envelope = eventEnvelope(
        id,
        appMentionEvent(id, {
          channel: 'C0OPS',
          user: 'U0ALICE',
          text: `<@${fake.botUserId}> status of payments?`,
        }),
      );
      const res = await postSigned(`${base}/slack/events`, eventBody(envelope));
      expect(res.status).toBe(200);
      // The event is acked first and queued right after.
      const jobs = await waitFor(
        () => queue.getWaiting(),
        (found) => found.length > 0,
      );
      expect(jobs.map((j) => [j.id, j.data])).toEqual([
        [
          startJobId(envelope.event_id),
          expect.objectContaining({ text: 'status of payments?', kind: 'mention' }),
        ],
      ]);
      const forged = await postSigned(`${base}/slack/events`, { ...eventBody(envelope), secret: 'wrong' });
      expect(forged.status).toBe(401);

      running.child.kill('SIGTERM');
      expect(await running.exited).toBe(0);
      expect(running.stdout.join('')).toContain('loopgate bot stopped');
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
      await deleteKeys(redis, `${prefix}:*`);
      await Promise.all([producer.quit(), redis.quit()]);
    }
  });

  it('names BOT_METRICS_PORT and exits 1 when that port is in use', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '0.0.0.0', resolve));
    const takenPort = (taken.address() as AddressInfo).port;
    try {
      running = startProcess(
        {
          SLACK_BOT_TOKEN: fake.token,
          SLACK_SIGNING_SECRET: TEST_SIGNING_SECRET,
          SLACK_API_URL: fake.apiUrl,
          PORT: String(await freePort()),
          BOT_METRICS_PORT: String(takenPort),
          LOOPGATE_CONFIG: join(cwd, 'loopgate.yaml'),
        },
        cwd,
      );
      expect(await running.exited).toBe(1);
      expect(running.stderr.join('')).toContain(
        `BOT_METRICS_PORT: port ${takenPort} is already in use (set BOT_METRICS_PORT to a free port)`,
      );
    } finally {
      taken.close();
    }
  });

  it('names the missing key and exits 1 when the environment is incomplete', async () => {
    running = startProcess({ SLACK_BOT_TOKEN: fake.token, LOOPGATE_CONFIG: join(cwd, 'loopgate.yaml') }, cwd);
    expect(await running.exited).toBe(1);
    expect(running.stderr.join('')).toContain('SLACK_SIGNING_SECRET: required');
  });

  it('exits 1 with one log line when Slack refuses the bot token', async () => {
    running = startProcess(
      {
        SLACK_BOT_TOKEN: 'xoxb-not-the-fake-token',
        SLACK_SIGNING_SECRET: TEST_SIGNING_SECRET,
        SLACK_API_URL: fake.apiUrl,
        PORT: String(await freePort()),
        BOT_METRICS_PORT: '0',
        LOOPGATE_CONFIG: join(cwd, 'loopgate.yaml'),
      },
      cwd,
    );
    expect(await running.exited).toBe(1);
    expect(running.stdout.join('')).toContain('Slack refused SLACK_BOT_TOKEN (invalid_auth)');
  });

  it('names the policy problem and exits 1 when the policy file is invalid', async () => {
    writeFileSync(join(cwd, 'bad.yaml'), 'approvals: { selfApproval: maybe }\n');
    running = startProcess(
      {
        SLACK_BOT_TOKEN: fake.token,
        SLACK_SIGNING_SECRET: TEST_SIGNING_SECRET,
        LOOPGATE_CONFIG: join(cwd, 'bad.yaml'),
      },
      cwd,
    );
    expect(await running.exited).toBe(1);
    expect(running.stderr.join('')).toContain('approvals.selfApproval');
  });
});
