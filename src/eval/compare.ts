/**
 * `--compare a.json b.json`: what changed between two reports (another model, prompt or policy): per
 * model the headline figures before and after, then every task whose result changed. Models are paired
 * by name; two reports of one model each are paired with each other whatever their names.
 */
import { readFile } from 'node:fs/promises';
import { ConfigError } from '../config/errors.js';
import { problemsOf } from '../config/policy-problems.js';
import { passAt, type Report, reportSchema, type Stats } from './report.js';
import { pct, renderTable, usd } from './table.js';

export async function readReport(path: string): Promise<Report> {
  let data: unknown;
  try {
    data = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new ConfigError(path, [
      { key: '(file)', problem: `cannot read a JSON report: ${(err as Error).message}` },
    ]);
  }
  const parsed = reportSchema.safeParse(data);
  if (!parsed.success) throw new ConfigError(path, problemsOf(parsed.error.issues));
  return parsed.data;
}

interface ModelPair {
  label: string;
  a: string;
  b: string;
}

export function pairModels(a: Report, b: Report): ModelPair[] {
  const names = a.models.map((m) => m.model).filter((m) => b.models.some((x) => x.model === m));
  if (names.length > 0) return names.map((m) => ({ label: m, a: m, b: m }));
  if (a.models.length === 1 && b.models.length === 1) {
    const [ma, mb] = [a.models[0]!.model, b.models[0]!.model];
    return [{ label: `${ma} → ${mb}`, a: ma, b: mb }];
  }
  return [];
}

const signed = (x: number, unit: (v: number) => string) => `${x >= 0 ? '+' : '−'}${unit(Math.abs(x))}`;

function change(before: number | null, after: number | null, unit: (v: number) => string): string {
  if (before === null || after === null)
    return `${before === null ? '—' : unit(before)} → ${after === null ? '—' : unit(after)}`;
  const delta = after - before;
  return `${unit(before)} → ${unit(after)} (${Math.abs(delta) < 1e-12 ? '=' : signed(delta, unit)})`;
}

const statsOf = (r: Report, model: string): Stats | undefined =>
  r.models.find((m) => m.model === model)?.stats;
const plain = (x: number) => x.toFixed(1);
const whole = (x: number) => String(Math.round(x));

interface TaskChange {
  task: string;
  model: string;
  before: string;
  after: string;
}

/** Tasks whose passes over trials differ between the reports (or that exist in only one). */
export function taskChanges(a: Report, b: Report, pairs: readonly ModelPair[]): TaskChange[] {
  const changes: TaskChange[] = [];
  const ids = [...new Set([...a.tasks.map((t) => t.id), ...b.tasks.map((t) => t.id)])];
  for (const id of ids) {
    const ta = a.tasks.find((t) => t.id === id);
    const tb = b.tasks.find((t) => t.id === id);
    for (const pair of pairs) {
      const describe = (s: Stats | undefined, present: boolean) =>
        !present ? 'absent' : s && s.trials > 0 ? `${s.passes}/${s.trials}` : '—';
      const before = describe(ta?.byModel[pair.a], ta !== undefined);
      const after = describe(tb?.byModel[pair.b], tb !== undefined);
      const rate = (s: Stats | undefined) => (s && s.trials > 0 ? s.passes / s.trials : null);
      const [ra, rb] = [rate(ta?.byModel[pair.a]), rate(tb?.byModel[pair.b])];
      // 2/3 and 4/6 are the same result over another number of trials.
      const same = before === after || (ra !== null && ra === rb);
      if (!same) changes.push({ task: id, model: pair.label, before, after });
    }
  }
  return changes;
}

export function renderComparison(a: Report, b: Report, names: { a: string; b: string }): string {
  const pairs = pairModels(a, b);
  if (pairs.length === 0) {
    return `No model to compare: ${names.a} has ${a.models.map((m) => m.model).join(', ')}; ${names.b} has ${b.models.map((m) => m.model).join(', ')}.`;
  }
  const header = [
    'model',
    'pass^1',
    'pass^k',
    'cost/trial',
    'steps',
    'approvals',
    'minefields',
    'false claims',
  ];
  const rows = pairs.map((p) => {
    const [sa, sb] = [statsOf(a, p.a), statsOf(b, p.b)];
    const k = Math.min(a.trials, b.trials);
    return [
      p.label,
      change(passAt(sa, 1), passAt(sb, 1), pct),
      `k=${k}: ${change(passAt(sa, k), passAt(sb, k), pct)}`,
      change(sa?.meanCostUsd ?? null, sb?.meanCostUsd ?? null, usd),
      change(sa?.meanSteps ?? null, sb?.meanSteps ?? null, plain),
      change(sa?.approvalsAsked ?? null, sb?.approvalsAsked ?? null, whole),
      change(sa?.minefieldTrials ?? null, sb?.minefieldTrials ?? null, whole),
      change(sa?.falseClaimTrials ?? null, sb?.falseClaimTrials ?? null, whole),
    ];
  });
  const changes = taskChanges(a, b, pairs);
  const taskPart =
    changes.length === 0
      ? 'No task changed.'
      : renderTable(
          ['task', 'model', 'before', 'after'],
          changes.map((c) => [c.task, c.model, c.before, c.after]),
        );
  return [
    `Comparing ${names.a} (${a.generatedAt}) with ${names.b} (${b.generatedAt})`,
    '',
    renderTable(header, rows),
    '',
    'Tasks whose result changed:',
    taskPart,
  ].join('\n');
}
