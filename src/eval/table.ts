/** The report as plain-text tables for a terminal: models first, then tasks by model. */
import { passAt, type Report, type Stats } from './report.js';

export const pct = (x: number | null) => (x === null ? '—' : `${(x * 100).toFixed(0)}%`);
export const usd = (x: number) => (x === 0 ? '$0' : x >= 0.01 ? `$${x.toFixed(2)}` : `$${x.toFixed(4)}`);
const secs = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

/** Columns padded to their widest cell; numbers right-aligned. */
export function renderTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const numeric = header.map(
    (_, i) => rows.length > 0 && rows.every((r) => /^[-+$—\d.%s/x]*$/.test(r[i] ?? '')),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '─'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

function topStops(s: Stats): string {
  return Object.entries(s.stopReasons)
    .sort((a, b) => b[1] - a[1])
    .map(([reason, n]) => `${reason} ${n}`)
    .join(', ');
}

/** The models' summary as cells, for the terminal and the HTML report. */
export function modelTableRows(report: Report): { header: string[]; rows: string[][] } {
  const k = report.trials;
  const header = [
    'model',
    'tasks',
    'pass^1',
    ...(k > 1 ? [`pass^${k}`] : []),
    'cost',
    'cost/trial',
    'steps',
    'tokens in/cached/out',
    'wall',
    'approvals',
    'by rule',
    'not needed',
    'minefields',
    'false claims',
    'stop reasons',
  ];
  const rows = report.models.map(({ model, tasks, stats: s }) => [
    model,
    String(tasks),
    pct(passAt(s, 1)),
    ...(k > 1 ? [pct(passAt(s, k))] : []),
    usd(s.costUsd),
    usd(s.meanCostUsd),
    s.meanSteps.toFixed(1),
    `${Math.round(s.meanInputTokens)}/${Math.round(s.meanCachedInputTokens)}/${Math.round(s.meanOutputTokens)}`,
    secs(s.meanWallMs),
    String(s.approvalsAsked),
    String(s.approvalsByRule),
    `${s.notNeededTask}/${s.notNeededRule ?? '—'}`,
    String(s.minefieldTrials),
    String(s.falseClaimTrials),
    topStops(s),
  ]);
  return { header, rows };
}

function modelTable(report: Report): string {
  const { header, rows } = modelTableRows(report);
  return renderTable(header, rows);
}

/** One row per task: passes over trials by model, and what failed. */
function taskTable(report: Report): string {
  const models = report.models.map((m) => m.model);
  const header = ['task', ...models, 'failed graders'];
  const rows = report.tasks.map((t) => {
    const cells = models.map((m) => {
      const s = t.byModel[m];
      return s && s.trials > 0 ? `${s.passes}/${s.trials}` : '—';
    });
    const failed = models
      .flatMap((m) => Object.entries(t.byModel[m]?.failedGraders ?? {}).map(([g, n]) => `${g} ${n}`))
      .join(', ');
    return [t.id, ...cells, failed];
  });
  return renderTable(header, rows);
}

export function renderReport(report: Report): string {
  return [
    `Suite ${report.suite}, ${report.trials} trial(s) per task, policy rules ${report.rules === 'enforce' ? 'enforced' : 'measured (every gated call asked)'}`,
    '',
    modelTable(report),
    '',
    taskTable(report),
    '',
    'approvals = rounds asked of people; by rule = gated calls a policy rule decided, nobody asked',
    'not needed = approvals asked for calls the task did not need / that a policy rule would allow (— : not measured, older records)',
  ].join('\n');
}
