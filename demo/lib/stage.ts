/**
 * The stage both the demo and the chat play on: real Redis under a fresh prefix, the stand-in Slack Web
 * API, and the real bot and worker processes started with an environment pointing at them. Only Slack
 * and the model are stood in; everything between a signed request to /slack/events and a Web API call
 * is production code. `close` stops the processes, deletes the prefix's keys and closes the stand-in,
 * whatever state it was left in.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import type { FakeSlack, FakeUser } from '../../test/fakes/slack-api-server.js';
import { startFakeSlack } from '../../test/fakes/slack-api-server.js';
import type { SlackIdentity } from '../../test/fakes/slack-signing.js';
import { DemoError } from './errors.js';
import { freePort } from './free-port.js';
import { type LoopgateProcess, startProcess } from './processes.js';
import { deletePrefixKeys } from './redis.js';

export interface ModelSettings {
  apiKey: string;
  /** Any OpenAI-compatible server; default OpenAI's own. */
  baseUrl?: string;
  name?: string;
}

export interface StageOptions {
  /** A connection from connectOrExplain; the stage deletes its keys with it and leaves it open. */
  redis: Redis;
  redisUrl: string;
  /** Absolute path of the policy file (LOOPGATE_CONFIG). */
  policyPath: string;
  model: ModelSettings;
  /** The people of the stand-in workspace, by user id. */
  users: Record<string, Partial<FakeUser>>;
  /** Part of the Redis prefix: `{loopgate-<label>-<random>}`. */
  label: string;
  /** Working directory of the processes. */
  cwd: string;
  /** Where bot.log and worker.log are written. */
  logDir: string;
  /**
   * Variables the processes inherit under the stage's own (the chat passes the user's environment, so
   * secrets the policy names reach the tools). Default: PATH only.
   */
  inherit?: Readonly<Record<string, string | undefined>>;
  /** Default warn. */
  logLevel?: string;
  /** How long the processes may take to become ready. Default 90 s (a loaded machine takes long). */
  readyTimeoutMs?: number;
}

export interface Stage {
  slack: FakeSlack;
  workspace: SlackIdentity;
  /** `http://127.0.0.1:<PORT>/slack/events` of the bot process. */
  eventsUrl: string;
  signingSecret: string;
  prefix: string;
  redisUrl: string;
  processes: readonly LoopgateProcess[];
  /** Throws a DemoError, with the end of its log, when a process has exited. */
  checkAlive(): void;
  close(): Promise<void>;
}

export const BOT_USER_ID = 'U0LOOPGATE';

function definedOnly(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}

function deathNotice(p: LoopgateProcess): string {
  const exit = p.exit();
  const how = exit?.signal ? `was killed by ${exit.signal}` : `exited with code ${exit?.code}`;
  return `the ${p.name} process ${how}. End of ${p.logPath}:\n${p.logTail()}`;
}

async function waitReady(
  base: string,
  processes: readonly LoopgateProcess[],
  timeoutMs: number,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  let last = 'no answer yet';
  while (Date.now() < until) {
    const dead = processes.find((p) => p.exit() !== undefined);
    if (dead) throw new DemoError(deathNotice(dead));
    // /readyz: Redis answers and at least one worker is connected to the queue.
    const res = await fetch(`${base}/readyz`).catch(() => null);
    if (res?.status === 200) return;
    if (res) last = `HTTP ${res.status} ${await res.text()}`;
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
  throw new DemoError(
    `the bot and the worker were not ready within ${timeoutMs / 1000} s (last /readyz: ${last}). Logs: ` +
      processes.map((p) => p.logPath).join(', '),
  );
}

export async function startStage(opts: StageOptions): Promise<Stage> {
  const { redis } = opts;
  const prefix = `{loopgate-${opts.label}-${randomBytes(4).toString('hex')}}`;
  const signingSecret = randomBytes(16).toString('hex');
  const processes: LoopgateProcess[] = [];
  let slack: FakeSlack | undefined;

  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      await Promise.allSettled(processes.map((p) => p.stop()));
      await slack?.close().catch(() => {});
      // After the processes: nothing writes under the prefix any more.
      await deletePrefixKeys(redis, prefix).catch(() => 0);
    })();
    return closed;
  };

  try {
    slack = await startFakeSlack({
      token: `xoxb-loopgate-${opts.label}`,
      botUserId: BOT_USER_ID,
      users: { [BOT_USER_ID]: { name: 'loopgate', real_name: 'loopgate', is_bot: true }, ...opts.users },
    });
    const port = await freePort();
    const probesPort = await freePort();
    const env: Record<string, string> = {
      ...definedOnly(opts.inherit ?? { PATH: process.env.PATH }),
      REDIS_URL: opts.redisUrl,
      LOOPGATE_PREFIX: prefix,
      LOOPGATE_CONFIG: opts.policyPath,
      SLACK_BOT_TOKEN: slack.token,
      SLACK_SIGNING_SECRET: signingSecret,
      // Empty counts as unset: a token in someone's .env must not switch the bot to Socket Mode.
      SLACK_APP_TOKEN: '',
      SLACK_API_URL: slack.apiUrl,
      OPENAI_API_KEY: opts.model.apiKey,
      ...(opts.model.baseUrl ? { OPENAI_BASE_URL: opts.model.baseUrl } : {}),
      ...(opts.model.name ? { OPENAI_MODEL: opts.model.name } : {}),
      PORT: String(port),
      METRICS_PORT: '0',
      BOT_METRICS_PORT: String(probesPort),
      LOG_LEVEL: opts.logLevel ?? 'warn',
      // The terminal shows the channel's messages, not Slack's sessions, streams and timeline: the
      // placeholder message is what it can draw.
      SLACK_AGENT_SURFACES: 'off',
    };
    processes.push(
      startProcess('bot', env, opts.cwd, join(opts.logDir, 'bot.log')),
      startProcess('worker', env, opts.cwd, join(opts.logDir, 'worker.log')),
    );
    const base = `http://127.0.0.1:${port}`;
    await waitReady(`http://127.0.0.1:${probesPort}`, processes, opts.readyTimeoutMs ?? 90_000);
    const fake = slack;
    return {
      slack: fake,
      workspace: { teamId: fake.teamId, appId: fake.appId, botUserId: fake.botUserId },
      eventsUrl: `${base}/slack/events`,
      signingSecret,
      prefix,
      redisUrl: opts.redisUrl,
      processes,
      checkAlive: () => {
        const dead = processes.find((p) => p.exit() !== undefined);
        if (dead) throw new DemoError(deathNotice(dead));
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
