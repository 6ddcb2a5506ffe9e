/**
 * The report as one self-contained HTML file: inline CSS and inline SVG charts (success against cost
 * per model, pass^k against k, and a grid of tasks by model). No script, font, stylesheet or image is
 * loaded from anywhere, so the file opens offline and can be attached to a ticket as it is.
 */
import { passAt, type Report } from './report.js';
import { modelTableRows, pct, usd } from './table.js';

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#4d7c0f', '#be185d'];

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const colour = (i: number) => PALETTE[i % PALETTE.length]!;

interface Box {
  width: number;
  height: number;
  left: number;
  bottom: number;
  top: number;
  right: number;
}

const BOX: Box = { width: 560, height: 320, left: 56, bottom: 40, top: 28, right: 16 };

function axes(
  box: Box,
  xLabel: string,
  yLabel: string,
  xTicks: [number, string][],
  yTicks: [number, string][],
) {
  const x0 = box.left;
  const y0 = box.height - box.bottom;
  const parts = [
    `<line x1="${x0}" y1="${y0}" x2="${box.width - box.right}" y2="${y0}" stroke="#555"/>`,
    `<line x1="${x0}" y1="${box.top}" x2="${x0}" y2="${y0}" stroke="#555"/>`,
    `<text x="${(x0 + box.width - box.right) / 2}" y="${box.height - 6}" text-anchor="middle">${escapeHtml(xLabel)}</text>`,
    `<text x="14" y="${(box.top + y0) / 2}" text-anchor="middle" transform="rotate(-90 14 ${(box.top + y0) / 2})">${escapeHtml(yLabel)}</text>`,
  ];
  for (const [x, label] of xTicks) {
    parts.push(`<text x="${x}" y="${y0 + 16}" text-anchor="middle" class="tick">${escapeHtml(label)}</text>`);
  }
  for (const [y, label] of yTicks) {
    parts.push(
      `<line x1="${x0}" y1="${y}" x2="${box.width - box.right}" y2="${y}" stroke="#e5e7eb"/>`,
      `<text x="${x0 - 6}" y="${y + 4}" text-anchor="end" class="tick">${escapeHtml(label)}</text>`,
    );
  }
  return parts.join('');
}

/** Coordinates to one decimal: enough for a screen, and the file stays small. */
const r1 = (x: number) => Math.round(x * 10) / 10;
const scaleY = (box: Box, v: number) => r1(box.height - box.bottom - v * (box.height - box.bottom - box.top));
const yTicks = (box: Box): [number, string][] => [0, 0.25, 0.5, 0.75, 1].map((v) => [scaleY(box, v), pct(v)]);

/** Each model a point: mean cost per trial (x) against pass^1 (y), and its pass^k as a ring below. */
function successVsCostChart(report: Report): string {
  const box = BOX;
  const costs = report.models.map((m) => m.stats.meanCostUsd);
  const maxCost = Math.max(...costs, 1e-6) * 1.15;
  const sx = (c: number) => r1(box.left + (c / maxCost) * (box.width - box.left - box.right));
  const xTicks: [number, string][] = [0, 0.5, 1].map((f) => [sx(f * maxCost), usd(f * maxCost)]);
  const k = report.trials;
  const points = report.models.map((m, i) => {
    const x = sx(m.stats.meanCostUsd);
    const y1 = scaleY(box, passAt(m.stats, 1) ?? 0);
    const pk = passAt(m.stats, k);
    const ring =
      pk === null || k === 1
        ? ''
        : `<line x1="${x}" y1="${y1}" x2="${x}" y2="${scaleY(box, pk)}" stroke="${colour(i)}" stroke-dasharray="3 3"/>` +
          `<circle cx="${x}" cy="${scaleY(box, pk)}" r="6" fill="white" stroke="${colour(i)}" stroke-width="2"><title>${escapeHtml(`${m.model}: pass^${k} ${pct(pk)}`)}</title></circle>`;
    return (
      ring +
      `<circle cx="${x}" cy="${y1}" r="7" fill="${colour(i)}"><title>${escapeHtml(`${m.model}: pass^1 ${pct(passAt(m.stats, 1))}, ${usd(m.stats.meanCostUsd)} per trial`)}</title></circle>` +
      // Labels to the left of points in the right half, so long model names stay inside the chart.
      (x > box.width / 2
        ? `<text x="${x - 10}" y="${y1 - 10}" text-anchor="end" fill="${colour(i)}">${escapeHtml(m.model)}</text>`
        : `<text x="${x + 10}" y="${y1 - 10}" fill="${colour(i)}">${escapeHtml(m.model)}</text>`)
    );
  });
  return svg(box, axes(box, 'mean cost per trial (USD)', 'success', xTicks, yTicks(box)) + points.join(''));
}

/** pass^k against k for each model: how reliability falls as more consecutive successes are required. */
function passHatChart(report: Report): string {
  const box = BOX;
  const maxK = Math.max(1, ...report.models.map((m) => m.stats.passHat.length));
  const sx = (k: number) =>
    r1(box.left + ((k - 1) / Math.max(1, maxK - 1)) * (box.width - box.left - box.right));
  const xTicks: [number, string][] = Array.from({ length: maxK }, (_, i) => [sx(i + 1), `k=${i + 1}`]);
  const lines = report.models.map((m, i) => {
    const pts = m.stats.passHat.flatMap((v, j) => (v === null ? [] : [[sx(j + 1), scaleY(box, v)] as const]));
    const path = pts.map(([x, y]) => `${x},${y}`).join(' ');
    const dots = pts.map(([x, y]) => `<circle cx="${x}" cy="${y}" r="4" fill="${colour(i)}"/>`).join('');
    return `<polyline points="${path}" fill="none" stroke="${colour(i)}" stroke-width="2"/>${dots}`;
  });
  return svg(box, axes(box, 'k (trials that must all pass)', 'pass^k', xTicks, yTicks(box)) + lines.join(''));
}

function svg(box: Box, body: string): string {
  return `<svg viewBox="0 0 ${box.width} ${box.height}" width="${box.width}" height="${box.height}" role="img">${body}</svg>`;
}

/** Background of a grid cell: red (none passed) through amber to green (all passed). */
function cellColour(passes: number, trials: number): string {
  const r = trials === 0 ? 0 : passes / trials;
  const hue = Math.round(r * 120);
  return `hsl(${hue} 70% 85%)`;
}

function taskGrid(report: Report): string {
  const models = report.models.map((m) => m.model);
  const head = `<tr><th>task</th>${models.map((m) => `<th>${escapeHtml(m)}</th>`).join('')}</tr>`;
  const rows = report.tasks.map((t) => {
    const title = `<td><b>${escapeHtml(t.id)}</b><br><span class="dim">${escapeHtml(t.title)}</span></td>`;
    const cells = models.map((m) => {
      const s = t.byModel[m];
      if (!s || s.trials === 0) return '<td>—</td>';
      const failed = Object.entries(s.failedGraders).map(([g, n]) => `${g} ${n}`);
      const tip = escapeHtml(failed.length > 0 ? `failed: ${failed.join(', ')}` : 'all graders passed');
      return `<td style="background:${cellColour(s.passes, s.trials)}" title="${tip}">${s.passes}/${s.trials}${failed.length > 0 ? `<br><span class="dim">${escapeHtml(failed.join(', '))}</span>` : ''}</td>`;
    });
    return `<tr>${title}${cells.join('')}</tr>`;
  });
  return `<table class="grid">${head}${rows.join('')}</table>`;
}

function summaryTable(report: Report): string {
  const { header, rows } = modelTableRows(report);
  const th = header.map((h) => `<th>${escapeHtml(h)}</th>`).join('');
  const trs = rows.map((r) => `<tr>${r.map((c) => `<td>${escapeHtml(c)}</td>`).join('')}</tr>`).join('');
  return `<table>${`<tr>${th}</tr>`}${trs}</table>`;
}

const CSS = `body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#111}h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f4f6}.dim{color:#666;font-size:12px}svg text{font-size:12px}svg .tick{fill:#555;font-size:11px}
.charts{display:flex;flex-wrap:wrap;gap:24px}dt{font-weight:600}dd{margin:0 0 6px 16px}`;

const GLOSSARY: [string, string][] = [
  ['pass^1', 'share of trials that passed every grader, averaged over tasks'],
  [
    'pass^k',
    'chance that k trials of a task all pass, C(c,k)/C(n,k) per task, averaged over tasks (τ-bench)',
  ],
  ['approvals', 'approvals put to the scripted person'],
  [
    'not needed',
    'approvals for calls the task did not need / that a policy rule would allow (— when rules are not measured)',
  ],
  ['minefields', 'trials in which something that must never happen happened'],
  ['false claims', 'trials whose answer claims an action that did not succeed'],
];

export function renderHtml(report: Report): string {
  const glossary = GLOSSARY.map(([t, d]) => `<dt>${escapeHtml(t)}</dt><dd>${escapeHtml(d)}</dd>`).join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>loopgate eval: ${escapeHtml(report.suite)}</title><style>${CSS}</style></head>
<body>
<h1>loopgate eval: ${escapeHtml(report.suite)}</h1>
<p class="dim">${report.trials} trial(s) per task, generated ${escapeHtml(report.generatedAt)}</p>
<h2>Models</h2>
${summaryTable(report)}
<div class="charts">
<figure><figcaption>Success against cost (filled: pass^1, ring: pass^${report.trials})</figcaption>${successVsCostChart(report)}</figure>
<figure><figcaption>pass^k against k</figcaption>${passHatChart(report)}</figure>
</div>
<h2>Tasks</h2>
${taskGrid(report)}
<h2>What the numbers mean</h2>
<dl>${glossary}</dl>
</body></html>
`;
}
