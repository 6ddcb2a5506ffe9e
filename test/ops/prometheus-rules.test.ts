/**
 * The dashboard and the alert rules in ops/: promtool accepts the rules and the example configuration,
 * the alerts' unit tests pass (each alert fires in a scenario built for it and stays quiet next to it),
 * and every metric the dashboard and the rules read is one loopgate exports (src/metrics) or one the
 * rules record. That they return data from real processes: test/e2e/prometheus-ops.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics/metrics.js';
import { dashboardQueries, namesIn, OPS, RULES_FILE, RULES_TEST_FILE, rules, tool } from './ops-files.js';

const run = (args: string[]) => {
  try {
    return { ok: true, out: execFileSync(tool('promtool'), args, { encoding: 'utf8', stdio: 'pipe' }) };
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    return { ok: false, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
};

/** Series names the registry exports (histograms as their _bucket, _sum and _count). */
async function exportedNames(): Promise<Set<string>> {
  const metrics = createMetrics();
  const text = await metrics.registry.metrics();
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m;
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(`${name}${s}`);
    else names.add(name!);
  }
  return names;
}

describe('ops/: Prometheus rules and the Grafana dashboard', () => {
  it('promtool check rules accepts the rules, and check config the example configuration', () => {
    const checked = run(['check', 'rules', RULES_FILE]);
    expect(checked.out).toMatch(/SUCCESS: \d+ rules found/);
    expect(checked.ok).toBe(true);
    const config = run(['check', 'config', join(OPS, 'prometheus', 'prometheus.example.yml')]);
    expect(config.ok, config.out).toBe(true);
  });

  it('promtool test rules: each alert fires in its scenario and not before', () => {
    const tested = run(['test', 'rules', RULES_TEST_FILE]);
    expect(tested.out, tested.out).toContain('SUCCESS');
    expect(tested.ok).toBe(true);
  });

  it('the rules test covers every alert', async () => {
    const { readFileSync } = await import('node:fs');
    const text = readFileSync(RULES_TEST_FILE, 'utf8');
    for (const alert of rules().alerts) expect(text).toContain(`alertname: ${alert.alert}`);
    expect(
      rules()
        .alerts.map((a) => a.alert)
        .sort(),
    ).toEqual([
      'LoopgateApprovalsWaitingTooLong',
      'LoopgateModelErrorRate',
      'LoopgateNoWorkerConsuming',
      'LoopgateOutcomeUnknown',
      'LoopgateRedisUnreachable',
    ]);
  });

  it('every metric the dashboard and the rules read exists (exported by loopgate or recorded by the rules)', async () => {
    const exported = await exportedNames();
    const { records, alerts } = rules();
    const known = new Set([...exported, ...records.map((r) => r.record)]);
    const read = [
      ...dashboardQueries().map((q) => ({ where: q.panel, expr: q.expr })),
      ...records.map((r) => ({ where: r.record, expr: r.expr })),
      ...alerts.map((a) => ({ where: a.alert, expr: a.expr })),
    ];
    const unknown = read.flatMap((r) =>
      namesIn(r.expr)
        .filter((n) => !known.has(n))
        .map((n) => `${r.where}: ${n}`),
    );
    expect(unknown).toEqual([]);
    // The check can fail: a made-up name is caught.
    expect(namesIn('sum(loopgate_no_such_metric)').filter((n) => !known.has(n))).toEqual([
      'loopgate_no_such_metric',
    ]);
  });

  it('the dashboard shows the runs, approvals, executions, Slack, queue, workers and cost', () => {
    const exprs = dashboardQueries()
      .map((q) => q.expr)
      .join('\n');
    for (const name of [
      'loopgate_runs_finished_total',
      'loopgate_steps_total',
      'loopgate_model_latency_seconds_bucket',
      'loopgate_approvals_pending',
      'loopgate_approvals_oldest_pending_seconds',
      'loopgate_approval_decision_seconds_bucket',
      'loopgate_executions_total',
      'loopgate_slack_rate_limited_total',
      'loopgate_slack_wait_seconds_bucket',
      'loopgate_queue_jobs',
      'loopgate_worker_taking_jobs',
      'loopgate_model_cost_usd_total',
    ]) {
      expect(exprs).toContain(name);
    }
    expect(exprs).toContain('outcome="outcome_unknown"');
  });
});
