/** The report's arithmetic, its renderings (table, HTML, progress) and --compare, on records made by hand. */
import { describe, expect, it } from 'vitest';
import { pairModels, renderComparison, taskChanges } from '../../src/eval/compare.js';
import { escapeHtml, renderHtml } from '../../src/eval/html.js';
import { createProgress } from '../../src/eval/progress.js';
import { buildReport, type Report } from '../../src/eval/report.js';
import type { TrialRecord } from '../../src/eval/results.js';
import type { LoadedTask } from '../../src/eval/suite.js';
import { renderReport } from '../../src/eval/table.js';

function rec(
  model: string,
  task: string,
  trial: number,
  passed: boolean,
  extra: Partial<TrialRecord['metrics']> = {},
): TrialRecord {
  return {
    model,
    task,
    trial,
    taskHash: 'h',
    passed,
    graders: [
      { grader: 'stop', passed: true, notes: [] },
      { grader: 'answer', passed, notes: passed ? [] : ['missing fact "x"'] },
    ],
    metrics: {
      steps: 2,
      inputTokens: 100,
      cachedInputTokens: 0,
      outputTokens: 10,
      costUsd: 0.01,
      wallMs: 1000,
      stopReason: 'completed',
      approvalsAsked: 1,
      approvalsByRule: 0,
      notNeededTask: 0,
      notNeededRule: 0,
      minefieldsHit: [],
      falseClaims: [],
      answerRejections: 0,
      toolRetries: 0,
      compactions: 0,
      subagentRuns: 0,
      ...extra,
    },
    answer: 'a',
    calls: [],
    at: '2026-03-02T00:00:00Z',
  };
}

const task = (id: string) => ({ spec: { id, title: `title of ${id}`, tags: [] } }) as unknown as LoadedTask;

function report(
  model: string,
  passes: Record<string, boolean[]>,
  extra: Partial<TrialRecord['metrics']> = {},
): Report {
  const records = Object.entries(passes).flatMap(([t, ps]) =>
    ps.map((p, i) => rec(model, t, i + 1, p, extra)),
  );
  return buildReport({
    suite: 's',
    trials: 3,
    models: [model],
    tasks: [...Object.keys(passes), 'unrun'].map(task),
    records,
  });
}

describe('the report', () => {
  it('has pass^k per task and averaged per model, and leaves tasks without trials out of the averages', () => {
    const r = report('m', { a: [true, true, false], b: [true, true, true] }, { minefieldsHit: ['x'] });
    const a = r.tasks.find((t) => t.id === 'a')!;
    expect(a.byModel.m?.passHat.map((x) => Number(x!.toFixed(4)))).toEqual([0.6667, 0.3333, 0]);
    expect(r.tasks.find((t) => t.id === 'unrun')?.byModel.m).toMatchObject({ trials: 0 });
    expect(r.rules).toBe('enforce');
    const m = r.models[0]!;
    expect(m.tasks).toBe(2);
    expect(m.stats.passHat.map((x) => Number(x!.toFixed(4)))).toEqual([0.8333, 0.6667, 0.5]);
    expect(m.stats).toMatchObject({
      trials: 6,
      passes: 5,
      meanCostUsd: 0.01,
      approvalsAsked: 6,
      notNeededRule: 0,
      minefieldTrials: 6,
      stopReasons: { completed: 6 },
      failedGraders: { answer: 1 },
    });
    expect(m.stats.costUsd).toBeCloseTo(0.06, 12);
  });

  it('renders tables: approvals asked, decided by rule, not needed (task/rule), and the rules mode', () => {
    const text = renderReport(
      report('m', { a: [true, false, false] }, { approvalsByRule: 2, notNeededRule: 1 }),
    );
    expect(text).toMatch(
      /^m\s+1\s+33%\s+0%\s+\$0\.03\s+\$0\.01\s+2\.0\s+100\/0\/10\s+1\.0s\s+3\s+6\s+0\/3\s+0\s+0\s+completed 3$/m,
    );
    expect(text).toMatch(/^a\s+1\/3\s+answer 2$/m);
    expect(text).toMatch(/^unrun\s+—\s*$/m);
    expect(text).toContain('policy rules enforced');
  });

  it('renders HTML with nothing loaded from elsewhere and every text escaped', () => {
    const html = renderHtml(report('<img src=x onerror=alert(1)>', { a: [true, false, true] }));
    expect(html).not.toMatch(/<img|https?:|<[^>]*\s(src|href)=|<script|url\(/i);
    expect(html).toContain(escapeHtml('<img src=x onerror=alert(1)>'));
    expect(html.match(/<svg/g)).toHaveLength(2);
  });
});

describe('--compare', () => {
  it('pairs models by name, or the only model of each report', () => {
    const a = report('m1', { x: [true] });
    expect(pairModels(a, report('m1', { x: [false] }))).toEqual([{ label: 'm1', a: 'm1', b: 'm1' }]);
    expect(pairModels(a, report('m2', { x: [false] }))).toEqual([{ label: 'm1 → m2', a: 'm1', b: 'm2' }]);
  });

  it('lists the tasks whose result changed, not those with the same rate over more trials', () => {
    const a = report('m', { same: [true, false, true], worse: [true, true, true], gone: [true] });
    const b = report('m', { same: [true, false, true], worse: [true, false, false], added: [false] });
    expect(taskChanges(a, b, pairModels(a, b))).toEqual(
      [
        { task: 'same', model: 'm', before: '2/3', after: '2/3' },
        { task: 'worse', model: 'm', before: '3/3', after: '1/3' },
        { task: 'gone', model: 'm', before: '1/1', after: 'absent' },
        { task: 'added', model: 'm', before: 'absent', after: '0/1' },
      ].filter((c) => c.before !== c.after),
    );
    const text = renderComparison(a, b, { a: 'a.json', b: 'b.json' });
    // pass^3 is unknown while some task has fewer than 3 trials.
    expect(text).toMatch(/^m\s+89% → 33% \(−56%\)\s+k=3: — → —\s/m);
    expect(text).toMatch(/^worse\s+m\s+3\/3\s+1\/3$/m);
    expect(text).not.toMatch(/^same/m);
  });

  it('shows pass^1 and pass^k before and after', () => {
    const a = report('m', { same: [true, false, true], worse: [true, true, true] });
    const b = report('m', { same: [true, false, true], worse: [true, false, false] });
    expect(renderComparison(a, b, { a: 'a', b: 'b' })).toMatch(
      /^m\s+83% → 50% \(−33%\)\s+k=3: 50% → 0% \(−50%\)/m,
    );
  });

  it('says so when there is nothing to pair', () => {
    const a = buildReport({ suite: 's', trials: 1, models: ['x', 'y'], tasks: [], records: [] });
    const b = buildReport({ suite: 's', trials: 1, models: ['z'], tasks: [], records: [] });
    expect(renderComparison(a, b, { a: 'a', b: 'b' })).toBe('No model to compare: a has x, y; b has z.');
  });
});

describe('progress', () => {
  it('prints one line per trial when not on a terminal', () => {
    let text = '';
    const p = createProgress({ write: (t: string) => (text += t), isTTY: false });
    p.start(2, 1);
    p.trialDone(rec('m', 'a', 1, false));
    p.finish();
    expect(text).toBe(
      '2 trials (1 already in the results file)\n[2/2] FAIL m a #1 (completed, 2 steps, 1.0s) failed: answer\n',
    );
  });

  it('redraws one line with a bar on a terminal', () => {
    let text = '';
    const p = createProgress({ write: (t: string) => (text += t), isTTY: true, columns: 200 });
    p.start(4, 0);
    p.trialDone(rec('m', 'a', 1, true));
    p.finish();
    const frames = text.split('\r\x1b[2K').filter(Boolean);
    expect(frames).toEqual([
      '[░░░░░░░░░░░░░░░░░░░░░░░░] 0/4 trials, 0 passed, 0 failed',
      '[██████░░░░░░░░░░░░░░░░░░] 1/4 trials, 1 passed, 0 failed · pass m a #1 (completed, 2 steps, 1.0s)\n',
    ]);
  });
});
