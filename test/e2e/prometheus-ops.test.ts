/**
 * The dashboard and the rules of ops/ against the real thing: Prometheus itself (Debian's package; the
 * test fails, never skips, when it is missing) scrapes a real bot and worker while runs go through them
 * (one approved and finished, one left waiting for its approval, a Slack 429 on the way), loads
 * ops/prometheus/loopgate-rules.yml, and every dashboard panel's query, every recorded signal the alerts
 * compare, and so every alert's input returns data; every rule evaluates without error.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../demo/lib/free-port.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { dashboardQueries, namesIn, RULES_FILE, rules, tool } from '../ops/ops-files.js';
import { askToDeploy, DEPLOYED, postedWith } from './support/deploy-case.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

let w: SlackWorld;
let prometheus: ChildProcess | undefined;
let promUrl = '';
let promLog = '';
const dir = mkdtempSync(join(tmpdir(), 'lg-prom-'));

const hostPort = (url: string) => new URL(url).host;

beforeAll(async () => {
  const binary = tool('prometheus');
  w = await startSlackWorld({ mode: 'split', workers: 1 });
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  writeFileSync(
    join(dir, 'prometheus.yml'),
    [
      'global:',
      '  scrape_interval: 1s',
      '  evaluation_interval: 1s',
      'rule_files:',
      `  - ${JSON.stringify(RULES_FILE)}`,
      'scrape_configs:',
      '  - job_name: loopgate-bot',
      '    static_configs:',
      `      - targets: [${JSON.stringify(hostPort(w.botMetricsUrl))}]`,
      '  - job_name: loopgate-worker',
      '    static_configs:',
      `      - targets: [${w.workerMetricsUrls.map((u) => JSON.stringify(hostPort(u))).join(', ')}]`,
      '',
    ].join('\n'),
  );
  prometheus = spawn(
    binary,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  prometheus.stdout?.on('data', (d: Buffer) => (promLog += d.toString()));
  prometheus.stderr?.on('data', (d: Buffer) => (promLog += d.toString()));
  await w.waitFor(
    'Prometheus ready',
    async () => (await fetch(`${promUrl}/-/ready`).catch(() => null))?.ok,
    30_000,
  );
}, 120_000);

afterAll(async () => {
  if (prometheus && prometheus.exitCode === null) {
    const exited = new Promise((resolve) => prometheus?.once('exit', resolve));
    prometheus.kill('SIGTERM');
    await exited;
  }
  await w?.close();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

interface QueryReply {
  status: string;
  data?: { resultType: string; result: unknown[] };
  error?: string;
}

async function query(expr: string): Promise<QueryReply> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  return (await res.json()) as QueryReply;
}

describe('ops/ against Prometheus scraping a real bot and worker', { timeout: 180_000 }, () => {
  it('every dashboard query and every alert signal returns data; every rule evaluates', async () => {
    // A run approved and finished, with a 429 from Slack on the way (the card's redraw or a progress edit).
    const done = await askToDeploy(w, 'prom-done');
    w.slack.failNext('chat.update', 1, { kind: 'rate_limited', retryAfterSec: 0 });
    expect((await w.click(w.message(done.card), PEOPLE.manager, ACTION_IDS.approve)).status).toBe(200);
    await w.ended(done.asked.runId);
    expect(postedWith(w, done, DEPLOYED)).toHaveLength(1);
    // A run left waiting for its approval.
    await askToDeploy(w, 'prom-waiting');

    const targets = await w.waitFor(
      'both targets up',
      async () => {
        const reply = await query('up == 1');
        return (reply.data?.result.length ?? 0) >= 1 + w.workerMetricsUrls.length ? reply : null;
      },
      30_000,
    );
    expect(targets.status).toBe('success');

    const { records, alerts } = rules();
    const checks = [
      ...dashboardQueries().map((q) => ({ what: `panel "${q.panel}"`, expr: q.expr })),
      ...records.map((r) => ({ what: `recorded signal ${r.record}`, expr: r.record })),
    ];
    const empty: string[] = [];
    for (const check of checks) {
      const got = await w
        .waitFor(
          `${check.what} to return data`,
          async () => {
            const reply = await query(check.expr);
            if (reply.status !== 'success') throw new Error(`${check.what}: ${reply.error}\n${check.expr}`);
            return (reply.data?.result.length ?? 0) > 0 ? reply : null;
          },
          60_000,
        )
        .catch(() => null);
      if (!got) empty.push(`${check.what}: ${check.expr}`);
    }
    expect(empty, promLog.slice(-2000)).toEqual([]);

    // Every alert compares recorded signals, each of which returned data above.
    const recorded = new Set(records.map((r) => r.record));
    for (const alert of alerts) {
      const inputs = namesIn(alert.expr);
      expect(inputs.length, alert.alert).toBeGreaterThan(0);
      expect(
        inputs.filter((n) => !recorded.has(n)),
        alert.alert,
      ).toEqual([]);
    }

    // The signals read what happened: one approval waits, one execution succeeded, Redis answers.
    const value = async (expr: string) => {
      const reply = (await query(expr)) as { data?: { result: { value: [number, string] }[] } };
      return Number(reply.data?.result[0]?.value[1]);
    };
    expect(await value('loopgate:approvals_pending:max')).toBe(1);
    expect(await value('loopgate:approvals_oldest_pending_seconds:max')).toBeGreaterThan(0);
    expect(await value('max(loopgate_executions_total{outcome="succeeded"})')).toBe(1);
    expect(await value('loopgate:redis_up:min')).toBe(1);
    expect(await value('sum(loopgate_slack_rate_limited_total)')).toBeGreaterThanOrEqual(1);

    // Every rule was evaluated without an error.
    const rulesReply = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as {
      data: { groups: { rules: { name: string; health: string; lastError?: string }[] }[] };
    };
    const evaluated = rulesReply.data.groups.flatMap((g) => g.rules);
    expect(evaluated.map((r) => r.name).sort()).toEqual(
      [...records.map((r) => r.record), ...alerts.map((a) => a.alert)].sort(),
    );
    expect(evaluated.filter((r) => r.health !== 'ok')).toEqual([]);
  });
});
