/** Reading ops/: the dashboard's queries, the rules, and where promtool and prometheus are. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';

export const OPS = join(import.meta.dirname, '..', '..', 'ops');
export const RULES_FILE = join(OPS, 'prometheus', 'loopgate-rules.yml');
export const RULES_TEST_FILE = join(OPS, 'prometheus', 'loopgate-rules.test.yml');
export const DASHBOARD_FILE = join(OPS, 'grafana', 'loopgate-dashboard.json');

const dashboardSchema = z.object({
  panels: z.array(
    z.object({
      title: z.string(),
      targets: z.array(z.object({ expr: z.string().min(1) })).min(1),
    }),
  ),
});

/** Every panel's queries, as `title: expr`. */
export function dashboardQueries(): { panel: string; expr: string }[] {
  const dashboard = dashboardSchema.parse(JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')));
  return dashboard.panels.flatMap((p) => p.targets.map((t) => ({ panel: p.title, expr: t.expr })));
}

const rulesSchema = z.object({
  groups: z.array(
    z.object({
      name: z.string(),
      rules: z.array(
        z.union([
          z.object({ record: z.string(), expr: z.string() }),
          z.object({ alert: z.string(), expr: z.string() }),
        ]),
      ),
    }),
  ),
});

export function rules() {
  const parsed = rulesSchema.parse(parse(readFileSync(RULES_FILE, 'utf8')));
  const all = parsed.groups.flatMap((g) => g.rules);
  return {
    records: all.flatMap((r) => ('record' in r ? [r] : [])),
    alerts: all.flatMap((r) => ('alert' in r ? [r] : [])),
  };
}

/** Metric and recording-rule names a PromQL expression reads (loopgate's own). */
export function namesIn(expr: string): string[] {
  return [...new Set(expr.match(/\bloopgate[a-z0-9_:]*/g) ?? [])];
}

/**
 * Path of a Prometheus tool. Never skipped: a missing tool fails the test that needs it, naming the
 * package (.ci/run installs it: `apt-get install -y prometheus`).
 */
export function tool(name: 'promtool' | 'prometheus'): string {
  try {
    return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(`${name} is not installed: apt-get install -y prometheus (as .ci/run does)`);
  }
}
