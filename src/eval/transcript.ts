/**
 * What one trial leaves behind for the graders: every tool call the model made (with its outcome), every
 * approval put to the scripted approver, the runs' final states and answers, and the world's final state.
 */
import type { ActionRecord, GatedCall, RunState, StopReason } from '../loop/types.js';
import type { WorldState } from './world/world-state.js';

/** How a gated call was decided: by the scripted person, or (with policy rules) by a rule. */
export type DecidedBy = 'person' | 'rule';

export interface AskedApproval {
  run: number;
  call: GatedCall;
  decision: 'approved' | 'rejected' | 'expired' | 'edited';
  decidedBy: DecidedBy;
  by?: string;
  reason?: string;
  /** For a call put to a person: would a policy rule allow it? null when rules are not measured. */
  ruleWouldAllow: boolean | null;
}

export interface CallRecord {
  /** Index of the run (0 for the question, 1 for the first follow-up…). */
  run: number;
  id: string;
  tool: string;
  /** Parsed arguments, or the raw text when the model sent malformed JSON. */
  args: unknown;
  /** True for write/notify calls (they run only once approved). */
  gated: boolean;
  ok: boolean;
  /** The error code of a failed result. */
  code?: string;
  /** Ran (or may have run): a read that was attempted, or a gated call whose action started. */
  executed: boolean;
  /** The gated call's end, when it had one. */
  outcome?: ActionRecord['outcome'];
}

export interface Transcript {
  runs: RunState[];
  calls: CallRecord[];
  asked: AskedApproval[];
  /** The accepted final answer of the last run; null when it ended without one. */
  answer: string | null;
  /** Each run's accepted answer (null when none), in order. */
  answers: (string | null)[];
  stopReason: StopReason | null;
  world: WorldState;
  wallMs: number;
  /** Final answers loopgate's own validator sent back to the model. */
  answerRejections: number;
  toolRetries: number;
}

/** Codes of results that mean the call never ran. */
const NOT_RUN = new Set([
  'unknown_tool',
  'invalid_json',
  'invalid_arguments',
  'rejected',
  'rejected_before',
  'expired',
  'cancelled',
  'approval_mismatch',
  'too_many_calls',
  'run_stopped',
]);

const RAN: ReadonlySet<ActionRecord['outcome']> = new Set(['succeeded', 'failed', 'outcome_unknown']);

function parseArgs(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

interface ResultView {
  ok: boolean;
  code?: string;
}

function resultOf(content: string): ResultView {
  try {
    const r = JSON.parse(content) as { ok?: unknown; error?: { code?: unknown } };
    return r.ok === true ? { ok: true } : { ok: false, code: String(r.error?.code ?? 'unknown') };
  } catch {
    return { ok: false, code: 'unreadable_result' };
  }
}

/** Every tool call of a run's messages, with what came of it. */
export function callsOf(state: RunState, run: number, isGated: (tool: string) => boolean): CallRecord[] {
  const results = new Map<string, ResultView>();
  for (const m of state.messages) if (m.role === 'tool') results.set(m.toolCallId, resultOf(m.content));
  const actions = new Map(state.actions.map((a) => [a.toolCallId, a]));
  const out: CallRecord[] = [];
  for (const m of state.messages) {
    if (m.role !== 'assistant' || !m.toolCalls) continue;
    for (const c of m.toolCalls) {
      const result = results.get(c.id) ?? { ok: false, code: 'no_result' };
      const action = actions.get(c.id);
      const gated = action !== undefined || isGated(c.name);
      const attempted = result.ok || !NOT_RUN.has(result.code ?? '');
      // A gated call runs only through an approved action; its result alone says nothing of that.
      const executed = gated ? action !== undefined && RAN.has(action.outcome) : attempted;
      out.push({
        run,
        id: c.id,
        tool: c.name,
        args: parseArgs(c.arguments),
        gated,
        ok: result.ok,
        ...(result.code ? { code: result.code } : {}),
        executed,
        ...(action ? { outcome: action.outcome } : {}),
      });
    }
  }
  return out;
}
