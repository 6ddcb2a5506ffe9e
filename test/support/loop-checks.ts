/**
 * Checkers of the engine's invariants (design.md §4, issue 11) for property tests. Each returns the
 * problems it finds (empty or null when none), so a test can also show that a broken variant is caught.
 */
import { summaryText } from '../../src/loop/context.js';
import type { Decision, GatedCall } from '../../src/loop/gated-calls.js';
import { argsHash, canonicalJson } from '../../src/loop/hash.js';
import type { Message } from '../../src/loop/messages.js';
import type { RunState } from '../../src/loop/run-state.js';

const describeMessage = (m: Message | undefined) =>
  m === undefined ? 'nothing' : m.role === 'tool' ? `the result of ${m.toolCallId}` : `a ${m.role} message`;

/**
 * What is wrong with `messages` as a request to the model: every tool call must be followed by exactly
 * one result, its own, in call order, before anything else (so before the next assistant message and
 * before the request ends); no result may stand without its call; no call id may appear twice.
 */
export function viewProblem(messages: readonly Message[]): string | null {
  const seen = new Set<string>();
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === 'tool') return `messages[${i}] answers ${m.toolCallId}, which no call just before it made`;
    if (m.role !== 'assistant' || !m.toolCalls?.length) continue;
    for (const [k, c] of m.toolCalls.entries()) {
      if (seen.has(c.id)) return `call id ${c.id} is made twice`;
      seen.add(c.id);
      const answer = messages[i + 1 + k];
      if (answer?.role !== 'tool' || answer.toolCallId !== c.id) {
        return `call ${c.id} of messages[${i}] is followed by ${describeMessage(answer)} instead of its result`;
      }
    }
    i += m.toolCalls.length;
  }
  return null;
}

/**
 * What is wrong with a run's stored history: well formed as a request, except that the last message may
 * be the assistant turn still open (`state.turn`), whose slots are exactly its calls.
 */
export function historyProblem(state: RunState): string | null {
  const { messages, turn } = state;
  if (!turn) return viewProblem(messages);
  const last = messages.at(-1);
  if (last?.role !== 'assistant' || !last.toolCalls?.length) return 'a turn is open but no call waits';
  const slots = turn.slots.map((s) => s.toolCallId);
  if (canonicalJson(slots) !== canonicalJson(last.toolCalls.map((c) => c.id))) {
    return `the open turn's slots ${slots.join(',')} are not its calls`;
  }
  return viewProblem(messages.slice(0, -1));
}

/**
 * A run stored as waiting for people or sub-agents while nothing of its turn waits any more: no decision
 * or child's end would ever be applied to it, so no job would move it on.
 */
export function waitingProblem(state: RunState): string | null {
  if (state.status !== 'awaiting_approval') return null;
  if (!state.turn) return 'awaiting approval without an open turn';
  const waiting = state.turn.pending.length + (state.turn.delegated?.length ?? 0);
  return waiting === 0 ? 'awaiting approval while no call of its turn waits' : null;
}

const same = (a: unknown, b: unknown) => canonicalJson(a) === canonicalJson(b);

/**
 * Null when `view`, a request sent to the model, is what the run's final history shows the model at
 * some point: a prefix of it, or a compaction's view (system prompt, question, that compaction's
 * summary, then the history from its cut on). Since the history only grows, every request of the run
 * must be one of these.
 */
export function viewOfHistoryProblem(view: readonly Message[], final: RunState): string | null {
  const { messages } = final;
  if (view.length <= messages.length && view.every((m, i) => same(m, messages[i]))) return null;
  for (const c of final.compactions ?? []) {
    const head: Message[] = [
      messages[0]!,
      { role: 'user', content: final.question },
      { role: 'assistant', content: summaryText(c) },
    ];
    const expected = [...head, ...messages.slice(c.upTo, c.upTo + view.length - head.length)];
    if (expected.length === view.length && view.every((m, i) => same(m, expected[i]))) return null;
  }
  return `a request of ${view.length} messages is neither a prefix of the stored history nor a compaction's view of it`;
}

/** A write/notify tool's execution as the tool itself saw it. */
export interface GatedExecution {
  tool: string;
  toolCallId: string;
  args: unknown;
}

/** The decision people recorded for a gated call, with the call as they were shown it. */
export interface RecordedDecision {
  call: GatedCall;
  decision: Decision;
}

/**
 * Gated executions that break invariant 2 or exactly-once: one without an approval recorded for its
 * call, one with other arguments than the approved ones (the edited ones when the approver edited
 * them) or whose hash is not the approved hash, and a call of a non-idempotent tool executed twice.
 */
export function gatedExecutionProblems(
  executions: readonly GatedExecution[],
  decided: ReadonlyMap<string, RecordedDecision>,
  idempotentTools: ReadonlySet<string>,
): string[] {
  const problems: string[] = [];
  const runs = new Map<string, number>();
  for (const e of executions) {
    const n = (runs.get(e.toolCallId) ?? 0) + 1;
    runs.set(e.toolCallId, n);
    if (n === 2 && !idempotentTools.has(e.tool)) problems.push(`${e.tool} ${e.toolCallId} executed twice`);
    const recorded = decided.get(e.toolCallId);
    if (recorded?.decision.kind !== 'approved') {
      problems.push(
        `${e.tool} ${e.toolCallId} executed without approval (${recorded?.decision.kind ?? 'none'})`,
      );
      continue;
    }
    const { call, decision } = recorded;
    const approvedArgs = decision.edited ? decision.edited.args : call.args;
    if (e.tool !== call.tool) problems.push(`${e.toolCallId} was approved as ${call.tool} but ran ${e.tool}`);
    if (!same(e.args, approvedArgs))
      problems.push(`${e.tool} ${e.toolCallId} ran other arguments than approved`);
    if (argsHash(e.args) !== decision.argsHash) {
      problems.push(`${e.tool} ${e.toolCallId} ran arguments whose hash was not approved`);
    }
  }
  return problems;
}
