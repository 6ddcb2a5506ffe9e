/**
 * Start-up of the bot and the worker (issue 25): each started as before (`node --import tsx src/…/main.ts`,
 * TypeScript transpiled at start-up) and as now (`node dist/…/main.js`, compiled by `npm run build`).
 * Printed per process and mode, over ROUNDS starts: the time from spawn to the "started" log line and a
 * 200 from its probe (the bot's /healthz, the worker's /readyz), and the resident memory (VmRSS) after IDLE_MS of idling. Uses the local
 * Redis, the fake Slack Web API and a minimal policy; builds dist/ first when it is missing.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { freePort } from '../demo/lib/free-port.js';
import { startFakeSlack } from '../test/fakes/slack-api-server.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const IDLE_MS = 3_000;

type Mode = 'tsx' | 'compiled';
type Entry = 'bot' | 'worker';

function command(mode: Mode, entry: Entry): string[] {
  return mode === 'tsx'
    ? ['--import', import.meta.resolve('tsx'), join(ROOT, `src/${entry}/main.ts`)]
    : [join(ROOT, `dist/${entry}/main.js`)];
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN);
  return kb / 1024;
}

async function waitReady(url: string, deadline: number): Promise<void> {
  while (performance.now() < deadline) {
    const ok = await fetch(url).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${url} never answered 200`);
}

async function startOnce(mode: Mode, entry: Entry, env: Record<string, string>, cwd: string) {
  const ports = { PORT: String(await freePort()), METRICS: String(await freePort()) };
  const started = performance.now();
  const child = spawn(process.execPath, command(mode, entry), {
    cwd,
    env: {
      PATH: process.env.PATH ?? '',
      ...env,
      PORT: ports.PORT,
      BOT_METRICS_PORT: ports.METRICS,
      METRICS_PORT: ports.METRICS,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const logged = new Promise<void>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('"msg":"loopgate bot started"') || out.includes('"msg":"worker started"')) resolve();
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
    });
    child.once('exit', (code) => reject(new Error(`${entry} exited ${code}:\n${out.slice(-2000)}`)));
  });
  await logged;
  // The bot's /readyz also waits for a worker to take jobs: its own readiness is /healthz on PORT.
  const probe =
    entry === 'bot' ? `http://127.0.0.1:${ports.PORT}/healthz` : `http://127.0.0.1:${ports.METRICS}/readyz`;
  await waitReady(probe, performance.now() + 30_000);
  const readyMs = performance.now() - started;
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  const rss = rssMb(child.pid ?? 0);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  return { readyMs, rss };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

async function main() {
  if (!existsSync(join(ROOT, 'dist/bot/main.js'))) {
    console.log('building dist/ (npm run build)…');
    execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, stdio: 'inherit' });
  }
  const slack = await startFakeSlack({ token: 'xoxb-bench' });
  const dir = mkdtempSync(join(tmpdir(), 'loopgate-startup-'));
  const policy = join(dir, 'loopgate.yaml');
  writeFileSync(policy, 'approvals: { approvers: [U0APPROVER] }\ntools: { current_time: {} }\n');
  const env = {
    LOOPGATE_CONFIG: policy,
    LOOPGATE_PREFIX: `{bench-startup-${process.pid}}`,
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    SLACK_BOT_TOKEN: 'xoxb-bench',
    SLACK_SIGNING_SECRET: 'bench-signing-secret',
    SLACK_API_URL: slack.apiUrl,
    OPENAI_API_KEY: 'sk-bench',
    OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    SLACK_AGENT_SURFACES: 'off',
    LOG_LEVEL: 'info',
  };
  console.log(`start-up to ready and idle RSS after ${IDLE_MS / 1000} s, median of ${ROUNDS} starts`);
  console.log('process  mode      ready (ms)   RSS (MB)');
  try {
    for (const entry of ['bot', 'worker'] as const) {
      for (const mode of ['tsx', 'compiled'] as const) {
        const runs = [];
        for (let i = 0; i < ROUNDS; i++) runs.push(await startOnce(mode, entry, env, dir));
        const ready = median(runs.map((r) => r.readyMs));
        const rss = median(runs.map((r) => r.rss));
        console.log(
          `${entry.padEnd(8)} ${mode.padEnd(9)} ${ready.toFixed(0).padStart(10)} ${rss.toFixed(1).padStart(10)}`,
        );
      }
    }
  } finally {
    await slack.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
