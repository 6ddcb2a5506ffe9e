/**
 * Reads the shadow calls of a time range for `loopgate shadow report`: each `shadow` audit event (a call
 * shown in shadow mode, src/store/audit/audit-log.ts) from --since to --until, the `shadow_decision` event that
 * answered it (read up to now: a call asked before --until may be answered after it), and the call's
 * arguments from its approval record while it exists. The figures are src/policy/shadow-report.ts's.
 */
import { type ShadowCall, type ShadowReport, shadowReport } from '../policy/shadow-report.js';
import type { Store } from '../store/index.js';
import { auditBetween } from './audit-range.js';
import { duration, table, utc } from './format.js';

const BATCH = 200;

export async function readShadowReport(
  store: Store,
  range: { from: number; to: number },
  now: number,
  minCalls?: number,
): Promise<ShadowReport> {
  const calls = new Map<string, ShadowCall>();
  const decisions = new Map<string, NonNullable<ShadowCall['decision']>>();
  for await (const { entry } of auditBetween(store.context, range.from, Math.max(range.to, now))) {
    if (entry.event === 'shadow' && entry.requestedAt <= range.to && !calls.has(entry.approvalId)) {
      calls.set(entry.approvalId, {
        approvalId: entry.approvalId,
        tool: entry.tool,
        rule: entry.rule,
        requestedAt: entry.requestedAt,
      });
    }
    const kind = entry.note;
    if (entry.event === 'shadow_decision' && (kind === 'would_approve' || kind === 'would_reject')) {
      if (!decisions.has(entry.approvalId))
        decisions.set(entry.approvalId, { kind, by: entry.decider, at: entry.decidedAt });
    }
  }
  const ids = [...calls.keys()];
  for (let i = 0; i < ids.length; i += BATCH) {
    const batch = ids.slice(i, i + BATCH);
    const records = await Promise.all(batch.map((id) => store.approvals.get(id)));
    records.forEach((record, j) => {
      const call = calls.get(batch[j] as string) as ShadowCall;
      if (record) call.args = record.args;
      const recorded = record?.shadowDecision;
      const decision =
        decisions.get(call.approvalId) ??
        (recorded ? { kind: recorded.decision, by: recorded.by, at: recorded.at } : undefined);
      if (decision) call.decision = decision;
    });
  }
  return shadowReport([...calls.values()], range, minCalls);
}

const percent = (rate: number | null) => (rate === null ? '-' : `${Math.round(rate * 1000) / 10}%`);

/** The report as people read it: one line per tool and rule, then the suggested allow rules. */
export function shadowText(r: ShadowReport): string {
  const lines = [
    `Shadow calls from ${utc(r.from)} to ${utc(r.to)}: ${r.groups.reduce((n, g) => n + g.calls, 0)}.`,
  ];
  if (r.groups.length === 0) return `${lines[0]}\n`;
  lines.push(
    table(
      ['tool', 'rule', 'calls', 'would approve', 'would reject', 'undecided', 'accepted', 'p50', 'p95'],
      r.groups.map((g) => [
        g.tool,
        g.rule || '(default ask)',
        String(g.calls),
        String(g.wouldApprove),
        String(g.wouldReject),
        String(g.undecided),
        percent(g.acceptanceRate),
        g.timeToDecideMs ? duration(g.timeToDecideMs.p50) : '-',
        g.timeToDecideMs ? duration(g.timeToDecideMs.p95) : '-',
      ]),
    ).trimEnd(),
  );
  const suggested = r.groups.filter((g) => g.suggestion);
  if (suggested.length > 0)
    lines.push('', 'Suggested allow rules (every decided call would have been approved):');
  for (const g of suggested) {
    lines.push(
      '',
      `# ${g.tool}, ${g.rule || 'default ask'}: ${g.suggestion?.evidence}`,
      (g.suggestion?.yaml ?? '').trimEnd(),
    );
  }
  return `${lines.join('\n')}\n`;
}
