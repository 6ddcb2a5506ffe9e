/**
 * What one trial leaves behind for the graders: every tool call the model made (with its outcome), every
 * approval put to the scripted approver, the runs' final states and answers, and the world's final state.
 */
import type { ActionRecord, GatedCall } from '../loop/gated-calls.js';
import type { ToolCall } from '../loop/messages.js';
import type { RunState } from '../loop/run-state.js';
import type { StopReason } from '../loop/run-status.js';
import type { WorldState } from './world/world-state.js';

/**
 * How a round of a gated call was decided: by scripted people (asked), by a policy rule (nobody asked), or
 * by the edit that opened it (the editor's edit counts as their approval; nobody else asked).
 */
type DecidedBy = 'person' | 'rule' | 'edit';

/** One approval round of a gated call: the model's arguments (round 1), or an approver's edit of them. */
export interface AskedApproval {
  /** Index of the person's run (0 for the question, 1 for the first follow-up…). */
  run: number;
  /** The sub-agent whose run made the call; absent for the person's run. */
  agent?: string;
  /** The call with this round's arguments and their hash. */
  call: GatedCall;
  /** 1 for the model's arguments, 2 after the first edit… */
  round: number;
  decision: 'approved' | 'rejected' | 'expired' | 'edited';
  decidedBy: DecidedBy;
  by?: string;
  /** With a quorum: who approved, in order. */
  votes?: string[];
  quorum?: number;
  /** The policy rule that decided, or whose ask this was. */
  rule?: string;
  reason?: string;
  /** Would a policy rule allow this round's call? (Always measured with the policy's real rules.) */
  ruleWouldAllow: boolean;
}

export interface CallRecord {
  /** Index of the person's run (0 for the question, 1 for the first follow-up…). */
  run: number;
  /** The sub-agent whose run made the call; absent for the person's run. */
  agent?: string;
  id: string;
  tool: string;
  /** Parsed arguments, or the raw text when the model sent malformed JSON. */
  args: unknown;
  /** The arguments that ran instead, when an approver edited them. */
  editedArgs?: unknown;
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
  /** The person's runs: the question's, then one per follow-up. */
  runs: RunState[];
  /** The sub-agents' runs, as they ended, with the person's run each belongs to. */
  children: { run: number; state: RunState }[];
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
  /** The arguments that ran, when a person edited the model's (the result says so). */
  edited?: unknown;
}

function resultOf(content: string): ResultView {
  try {
    const r = JSON.parse(content) as {
      ok?: unknown;
      error?: { code?: unknown };
      edited?: { args?: unknown };
    };
    const edited = r.edited?.args === undefined ? {} : { edited: r.edited.args };
    return r.ok === true
      ? { ok: true, ...edited }
      : { ok: false, code: String(r.error?.code ?? 'unknown'), ...edited };
  } catch {
    return { ok: false, code: 'unreadable_result' };
  }
}

/** What one call came to, given its result and the action that gated it (if any). */
function callRecord(
  c: ToolCall,
  result: ResultView,
  action: ActionRecord | undefined,
  gated: boolean,
  where: { run: number; agent: string | undefined },
): CallRecord {
  const attempted = result.ok || !NOT_RUN.has(result.code ?? '');
  // A gated call runs only through an approved action; its result alone says nothing of that.
  const executed = gated ? action !== undefined && RAN.has(action.outcome) : attempted;
  return {
    run: where.run,
    ...(where.agent ? { agent: where.agent } : {}),
    id: c.id,
    tool: c.name,
    args: parseArgs(c.arguments),
    ...(result.edited === undefined ? {} : { editedArgs: result.edited }),
    gated,
    ok: result.ok,
    ...(result.code ? { code: result.code } : {}),
    executed,
    ...(action ? { outcome: action.outcome } : {}),
  };
}

/** Every tool call of a run's messages, with what came of it (`agent`: the sub-agent whose run it is). */
export function callsOf(
  state: RunState,
  run: number,
  isGated: (tool: string) => boolean,
  agent?: string,
): CallRecord[] {
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
      out.push(callRecord(c, result, action, gated, { run, agent }));
    }
  }
  return out;
}
