/**
 * `loopgate policy replay`: the calls people were asked about (or rules decided) in a time range, read
 * from the audit log, each with its arguments from its approval record, decided again under a proposed
 * policy (src/policy/replay.ts compares). A round an approver edited counts once, as its edited round.
 */
import type { Policy } from '../config/policy.js';
import { decideGate } from '../policy/gate.js';
import {
  CHANGES,
  type Change,
  changesBetween,
  type Outcome,
  outcomeText,
  proposedOutcome,
  recordedOutcome,
} from '../policy/replay.js';
import type { ApprovalRecord, Store } from '../store/index.js';
import { auditBetween } from './audit-range.js';
import { utc } from './format.js';

interface ReplayedCall {
  approvalId: string;
  runId: string;
  tool: string;
  effect: 'write' | 'notify';
  args: unknown;
  requester: string;
  requestedAt: number;
  /** How the round ended: approved, rejected, expired, cancelled. */
  decision: string;
  recorded: Outcome;
  proposed: Outcome;
  changes: Change[];
}

interface ReplayReport {
  from: number;
  to: number;
  /** Calls decided again (changed or not). */
  replayed: number;
  changed: ReplayedCall[];
  counts: Record<Change, number>;
  /** Decisions in the range whose approval record is gone (records expire): not replayed. */
  unreplayable: Array<{ approvalId: string; tool: string; why: string }>;
}

/** Approval records read at once. */
const BATCH = 200;

/** Whether the proposed policy offers `tool` at all: a built-in or custom tool it enables, or an MCP server's. */
function offers(policy: Policy, tool: string): boolean {
  if (Object.hasOwn(policy.tools, tool) && (policy.tools as Record<string, unknown>)[tool] !== undefined) {
    return true;
  }
  if (policy.custom.some((entry) => entry.name === tool)) return true;
  return Object.keys(policy.mcp?.servers ?? {}).some((server) => tool.startsWith(`${server}__`));
}

function replayRecord(proposed: Policy, record: ApprovalRecord): ReplayedCall {
  const recorded = recordedOutcome(record);
  const next = proposedOutcome(
    // Judged at the moment it was asked: freezes then, not now.
    offers(proposed, record.tool) ? decideGate(proposed, record.tool, record.args, record.createdAt) : null,
  );
  return {
    approvalId: record.approvalId,
    runId: record.runId,
    tool: record.tool,
    effect: record.effect,
    args: record.args,
    requester: record.requester,
    requestedAt: record.createdAt,
    decision: record.status,
    recorded,
    proposed: next,
    changes: changesBetween(recorded, next),
  };
}

export async function replayPolicy(
  store: Store,
  proposed: Policy,
  from: number,
  to: number,
): Promise<ReplayReport> {
  const decided = new Map<string, string>();
  for await (const { entry } of auditBetween(store.context, from, to)) {
    if (entry.event !== 'decision' || entry.decision === '' || entry.decision === 'superseded') continue;
    decided.set(entry.approvalId, entry.tool);
  }
  const report: ReplayReport = {
    from,
    to,
    replayed: 0,
    changed: [],
    counts: Object.fromEntries(CHANGES.map((c) => [c, 0])) as Record<Change, number>,
    unreplayable: [],
  };
  const ids = [...decided.keys()];
  for (let i = 0; i < ids.length; i += BATCH) {
    const batch = ids.slice(i, i + BATCH);
    const records = await Promise.all(batch.map((id) => store.approvals.get(id)));
    records.forEach((record, j) => {
      const approvalId = batch[j] as string;
      if (!record) {
        report.unreplayable.push({
          approvalId,
          tool: decided.get(approvalId) ?? '',
          why: 'its approval record has expired (the arguments are gone)',
        });
        return;
      }
      const call = replayRecord(proposed, record);
      report.replayed += 1;
      if (call.changes.length === 0) return;
      report.changed.push(call);
      for (const change of call.changes) report.counts[change] += 1;
    });
  }
  report.changed.sort((a, b) => a.requestedAt - b.requestedAt);
  return report;
}

const ARGS_CHARS = 160;

const argsText = (args: unknown) => {
  const text = JSON.stringify(args) ?? 'null';
  return text.length > ARGS_CHARS ? `${text.slice(0, ARGS_CHARS - 1)}…` : text;
};

/** The report as people read it: each changed call, then the totals. */
export function replayText(r: ReplayReport): string {
  const lines = [`Replayed ${r.replayed} call(s) decided from ${utc(r.from)} to ${utc(r.to)}.`];
  for (const c of r.changed) {
    lines.push(
      `${utc(c.requestedAt)}  ${c.tool} (${c.effect}) ${argsText(c.args)}  run ${c.runId}, ${c.decision}`,
      `    was: ${outcomeText(c.recorded)}`,
      `    now: ${outcomeText(c.proposed)}  [${c.changes.join(', ')}]`,
    );
  }
  const totals = CHANGES.filter((c) => r.counts[c] > 0).map(
    (c) => `${r.counts[c]} ${c.replaceAll('_', ' ')}`,
  );
  lines.push(
    r.changed.length === 0
      ? 'No call would be decided differently.'
      : `${r.changed.length} call(s) would be decided differently: ${totals.join(', ')}.`,
  );
  if (r.unreplayable.length > 0) {
    lines.push(`${r.unreplayable.length} decision(s) not replayed: their approval records have expired.`);
  }
  return `${lines.join('\n')}\n`;
}

/** Whether the report crosses `failOn` (change kinds, or `any`). */
export function crosses(r: ReplayReport, failOn: readonly (Change | 'any')[]): boolean {
  return failOn.some((f) => (f === 'any' ? r.changed.length > 0 : r.counts[f] > 0));
}
