/**
 * What an on-call engineer needs from a list of runs: how old each is, how long it has worked, what it
 * cost, and for a paused run whom it waits on and since when, sorted so what needs attention comes
 * first: runs waiting for people (longest wait first), then working runs (longest first), then runs that
 * failed or stopped, then the rest (newest first).
 */
import type { ApprovalRecord, RunRow } from '../store/index.js';

export interface AttentionRow extends RunRow {
  ageMs: number;
  /** Creation to the last update for an ended run; to now for one still open. */
  durationMs: number;
  /** Approvers (user and group ids) of its pending approvals, `agent:<name>` for sub-agents it waits for. */
  waitingOn: string[];
  /** Since the oldest pending approval was asked; null when it waits on nobody. */
  waitingMs: number | null;
}

const OPEN = new Set(['running', 'awaiting_approval']);
const TROUBLE = new Set(['failed', 'stopped']);

function rank(row: AttentionRow): number {
  if (row.status === 'awaiting_approval') return 0;
  if (row.status === 'running') return 1;
  if (TROUBLE.has(row.status)) return 2;
  return 3;
}

export function attentionRows(
  rows: readonly RunRow[],
  pending: ReadonlyMap<string, readonly ApprovalRecord[]>,
  now: number,
): AttentionRow[] {
  const out = rows.map((row): AttentionRow => {
    const approvals = pending.get(row.runId) ?? [];
    const approvers = approvals.flatMap((a) => [...a.approvers.users, ...a.approvers.groups]);
    const since = approvals.length > 0 ? Math.min(...approvals.map((a) => a.createdAt)) : null;
    return {
      ...row,
      ageMs: Math.max(0, now - row.createdAt),
      durationMs: Math.max(0, (OPEN.has(row.status) ? now : row.updatedAt) - row.createdAt),
      waitingOn: [...new Set([...approvers, ...row.waitingOnAgents.map((a) => `agent:${a}`)])],
      waitingMs: since === null ? null : Math.max(0, now - since),
    };
  });
  return out.sort(
    (a, b) =>
      rank(a) - rank(b) ||
      (rank(a) === 0 ? (b.waitingMs ?? 0) - (a.waitingMs ?? 0) : 0) ||
      (rank(a) === 1 ? a.createdAt - b.createdAt : b.createdAt - a.createdAt) ||
      a.runId.localeCompare(b.runId),
  );
}

/** ANSI colours, only for a terminal (and never with NO_COLOR set). */
export interface Paint {
  status(status: string, text: string): string;
}

const ANSI = { red: 31, green: 32, yellow: 33, cyan: 36 } as const;
const wrap = (code: number, text: string) => `\u001b[${code}m${text}\u001b[0m`;

export function paintFor(stream: object, env: Readonly<Record<string, string | undefined>>): Paint {
  if ((stream as { isTTY?: unknown }).isTTY !== true || (env.NO_COLOR ?? '') !== '') {
    return { status: (_s, text) => text };
  }
  const colour: Record<string, number> = {
    awaiting_approval: ANSI.yellow,
    running: ANSI.cyan,
    failed: ANSI.red,
    stopped: ANSI.red,
    completed: ANSI.green,
  };
  return {
    status: (status, text) => (colour[status] === undefined ? text : wrap(colour[status], text)),
  };
}
