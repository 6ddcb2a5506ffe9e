/**
 * The eval's report, per model and per task: pass^1 and pass^k, cost, tokens, steps, wall time, stop
 * reasons, approvals (asked, by rule, not needed), minefields hit and false claims. The same object is
 * written as JSON, rendered as a table and as HTML, and read back by `--compare`.
 */
import { z } from 'zod';
import { meanPassHatK, passHatK } from './pass-k.js';
import type { TrialRecord } from './results.js';
import type { LoadedTask } from './suite.js';

const stats = z.object({
  trials: z.number(),
  passes: z.number(),
  errors: z.number(),
  /** pass^k for k = 1..n (index 0 is k = 1); for a model, averaged over its tasks. */
  passHat: z.array(z.number().nullable()),
  costUsd: z.number(),
  meanCostUsd: z.number(),
  meanSteps: z.number(),
  meanInputTokens: z.number(),
  /** Of the input, tokens served from the server's prompt cache (absent in reports of older versions). */
  meanCachedInputTokens: z.number().default(0),
  meanOutputTokens: z.number(),
  meanWallMs: z.number(),
  stopReasons: z.record(z.string(), z.number()),
  approvalsAsked: z.number(),
  approvalsByRule: z.number(),
  notNeededTask: z.number(),
  notNeededRule: z.number().nullable(),
  /** Trials that hit at least one minefield. */
  minefieldTrials: z.number(),
  /** Trials whose answer claimed an action that did not succeed. */
  falseClaimTrials: z.number(),
  /** Failures per grader. */
  failedGraders: z.record(z.string(), z.number()),
});
export type Stats = z.output<typeof stats>;

export const reportSchema = z.object({
  version: z.literal(1),
  suite: z.string(),
  generatedAt: z.string(),
  trials: z.number(),
  /** How the policy's rules were applied (absent in reports of older versions: enforce). */
  rules: z.enum(['enforce', 'measure']).default('enforce'),
  models: z.array(z.object({ model: z.string(), tasks: z.number(), stats })),
  tasks: z.array(
    z.object({
      id: z.string(),
      title: z.string(),
      tags: z.array(z.string()),
      byModel: z.record(z.string(), stats),
    }),
  ),
});
export type Report = z.output<typeof reportSchema>;

const mean = (xs: readonly number[]) => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);

function count<T>(xs: readonly T[], key: (x: T) => string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) for (const k of key(x)) out[k] = (out[k] ?? 0) + 1;
  return out;
}

/** The statistics of some trials; `passHat` is filled by the caller (per task, or averaged per model). */
function statsOf(records: readonly TrialRecord[], passHat: (number | null)[]): Stats {
  const m = records.map((r) => r.metrics);
  const cost = m.reduce((s, x) => s + x.costUsd, 0);
  const rule = m.map((x) => x.notNeededRule);
  return {
    trials: records.length,
    passes: records.filter((r) => r.passed).length,
    errors: records.filter((r) => r.error !== undefined).length,
    passHat,
    costUsd: cost,
    meanCostUsd: records.length === 0 ? 0 : cost / records.length,
    meanSteps: mean(m.map((x) => x.steps)),
    meanInputTokens: mean(m.map((x) => x.inputTokens)),
    meanCachedInputTokens: mean(m.map((x) => x.cachedInputTokens)),
    meanOutputTokens: mean(m.map((x) => x.outputTokens)),
    meanWallMs: mean(m.map((x) => x.wallMs)),
    stopReasons: count(records, (r) => [
      r.error !== undefined ? 'runner_error' : (r.metrics.stopReason ?? 'none'),
    ]),
    approvalsAsked: m.reduce((s, x) => s + x.approvalsAsked, 0),
    approvalsByRule: m.reduce((s, x) => s + x.approvalsByRule, 0),
    notNeededTask: m.reduce((s, x) => s + x.notNeededTask, 0),
    notNeededRule: rule.some((x) => x === null) ? null : rule.reduce<number>((s, x) => s + (x ?? 0), 0),
    minefieldTrials: m.filter((x) => x.minefieldsHit.length > 0).length,
    falseClaimTrials: m.filter((x) => x.falseClaims.length > 0).length,
    failedGraders: count(records, (r) => r.graders.filter((g) => !g.passed).map((g) => g.grader)),
  };
}

const taskPassHat = (n: number, c: number) => Array.from({ length: n }, (_, i) => passHatK(n, c, i + 1));

interface ReportInput {
  suite: string;
  trials: number;
  models: readonly string[];
  tasks: readonly LoadedTask[];
  /** Default enforce. */
  rules?: 'enforce' | 'measure';
  records: readonly TrialRecord[];
}

export function buildReport(input: ReportInput): Report {
  const of = (model: string, task: string) =>
    input.records.filter((r) => r.model === model && r.task === task && r.trial <= input.trials);
  const tasks = input.tasks.map((t) => {
    const byModel: Record<string, Stats> = {};
    for (const model of input.models) {
      const rs = of(model, t.spec.id);
      byModel[model] = statsOf(rs, taskPassHat(rs.length, rs.filter((r) => r.passed).length));
    }
    return { id: t.spec.id, title: t.spec.title, tags: t.spec.tags, byModel };
  });
  const models = input.models.map((model) => {
    const run = tasks.filter((t) => (t.byModel[model]?.trials ?? 0) > 0);
    const counts = run.map((t) => ({ n: t.byModel[model]!.trials, c: t.byModel[model]!.passes }));
    const maxK = Math.max(0, ...counts.map((c) => c.n));
    const passHat = Array.from({ length: maxK }, (_, i) => meanPassHatK(counts, i + 1));
    const records = run.flatMap((t) => of(model, t.id));
    return { model, tasks: run.length, stats: statsOf(records, passHat) };
  });
  return {
    version: 1,
    suite: input.suite,
    generatedAt: new Date().toISOString(),
    trials: input.trials,
    rules: input.rules ?? 'enforce',
    models,
    tasks,
  };
}

/** pass^k of some stats at `k` (1-based), or null when not every task had k trials. */
export const passAt = (s: Stats | undefined, k: number): number | null => s?.passHat[k - 1] ?? null;
