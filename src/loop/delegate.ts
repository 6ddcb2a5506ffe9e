/**
 * Sub-agents in the engine. A tool marked `delegate` (`ask_<agent>`) is never executed: its call pauses
 * the turn like a gated call, and its slot is filled only by the end of a child run that the worker
 * starts (`delegated` on the interruption). The engine decides everything that must hold whatever the
 * model says: which delegations are refused (too deep, an agent asking itself), what each child may
 * spend (the parent's remainder), what the parent is charged, and what the model reads of the child.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { remainingMs } from './budget.js';
import { budgetLimits } from './budget-limits.js';
import { RunStatusError } from './errors.js';
import type { ActionRecord } from './gated-calls.js';
import { boundResult, errorResult, summarise, truncateText } from './observation.js';
import type { EngineDeps } from './ports.js';
import { type Evidence, NOT_ENDED, type RunState, type StepOutcome } from './run-state.js';
import type { ChildAction, ChildCaps, ChildOutcome, DelegatedCall, SubagentRecord } from './subagents.js';
import type { AnyTool } from './tool-contract.js';
import type { ToolResult } from './tool-result.js';
import { flushTurn, setSlot } from './turn.js';

/** Levels of sub-agents below a person's run when the limits say nothing. */
export const DEFAULT_AGENT_DEPTH = 2;
/** Sub-agent calls of one reply started at once when the limits say nothing. */
export const DEFAULT_PARALLEL_AGENTS = 4;

/** The arguments of every `ask_<agent>` tool. */
export const delegationArgs = z.strictObject({
  task: z.string().trim().min(1).max(8_000).describe('What the sub-agent should do, in full sentences.'),
  context: z
    .string()
    .max(16_000)
    .optional()
    .describe('Facts it needs that are not in the task (it does not see this conversation).'),
});

/**
 * The child run answering a call: derived from the parent's run id and the call id, so handing the call
 * over again (a recovered job) finds the same run. Valid as a run id (`[A-Za-z0-9_-]`, not all digits).
 */
export function childRunIdFor(runId: string, toolCallId: string): string {
  return `c-${createHash('sha256').update(`${runId}/${toolCallId}`).digest('hex').slice(0, 32)}`;
}

/**
 * Why a call of a sub-agent tool is refused, as the result the model reads; null when it may go ahead.
 * Refused: a sub-agent deeper than `maxAgentDepth`, and an agent already working further up (an agent
 * cannot ask itself, directly or through others).
 */
export function delegationRefusal(tool: AnyTool, state: RunState): ToolResult | null {
  const agent = tool.delegate?.agent;
  if (agent === undefined) return null;
  const lineage = state.agent?.lineage ?? [];
  if (lineage.includes(agent)) {
    const chain = [...lineage, agent].join(' → ');
    return errorResult(
      'delegation_refused',
      `Not delegated: the sub-agent ${agent} is already working on this further up (${chain}); an agent cannot ask itself, directly or through other agents. Do the work with your own tools, or answer with what you have.`,
    );
  }
  const depth = (state.agent?.depth ?? 0) + 1;
  const max = state.limits.maxAgentDepth ?? DEFAULT_AGENT_DEPTH;
  if (depth > max) {
    return errorResult(
      'delegation_refused',
      `Not delegated: ${agent} would be a sub-agent ${depth} levels deep; at most ${max} are allowed. Do the work with your own tools, or answer with what you have.`,
    );
  }
  return null;
}

/**
 * What each of `count` children handed over together may spend: the parent's remaining tokens and cost
 * shared equally (their spending adds up), and all its remaining active time (they work side by side,
 * and the parent is charged the longest of them).
 */
export function childCaps(state: RunState, count: number, now: number): ChildCaps {
  const { usage } = state;
  // The parent's budgets with what people granted it.
  const limits = budgetLimits(state);
  const n = Math.max(1, count);
  const tokensLeft = Math.max(0, limits.maxTokens - usage.inputTokens - usage.outputTokens);
  const costLeft = Math.max(0, limits.maxCostUsd - usage.costUsd);
  return {
    maxTokens: Math.floor(tokensLeft / n),
    maxCostUsd: costLeft / n,
    deadlineMs: Math.max(0, remainingMs(state, now)),
  };
}

/** The calls of a turn to hand to children, with their caps (args already validated by the tool's schema). */
export function delegateCalls(
  state: RunState,
  calls: ReadonlyArray<{ toolCallId: string; tool: AnyTool; args: unknown }>,
  now: number,
): DelegatedCall[] {
  return calls.map(({ toolCallId, tool, args }) => {
    const { task, context } = delegationArgs.parse(args);
    return {
      toolCallId,
      tool: tool.name,
      agent: tool.delegate?.agent ?? tool.name,
      childRunId: childRunIdFor(state.runId, toolCallId),
      task,
      ...(context === undefined ? {} : { context }),
      caps: childCaps(state, calls.length, now),
      at: now,
    };
  });
}

/** Every write/notify action of a run and of its sub-agents, for checking what its answer claims. */
export function allActions(state: RunState): ActionRecord[] {
  const children = state.subagents?.flatMap((s) => s.actions) ?? [];
  return children.length === 0 ? state.actions : [...state.actions, ...children];
}

/** How a finished child run ended, as its parent's slot is filled with it. */
export function outcomeOfChild(toolCallId: string, child: RunState): ChildOutcome {
  const agent = child.agent?.name ?? 'sub-agent';
  const status = child.status;
  if (status === 'running' || status === 'awaiting_approval') {
    throw new RunStatusError(status, 'report the end of');
  }
  return {
    toolCallId,
    childRunId: child.runId,
    agent,
    status,
    stopReason: child.stopReason,
    stopMessage: child.stopMessage,
    answer: child.answer === null ? null : child.answer.join('\n\n'),
    actions: [
      ...child.actions.map((a) => ({ ...a, agent })),
      ...(child.subagents?.flatMap((s) => s.actions) ?? []),
    ],
    usage: {
      inputTokens: child.usage.inputTokens,
      outputTokens: child.usage.outputTokens,
      costUsd: child.usage.costUsd,
      activeMs: child.usage.activeMs,
      steps: child.step,
    },
  };
}

const actionLine = (a: ChildAction) =>
  `${a.tool} by ${a.agent}: ${a.outcome.replaceAll('_', ' ')}${a.decidedBy ? ` (decided by ${a.decidedBy})` : ''}`;

const usageOf = (o: ChildOutcome) => ({
  inputTokens: o.usage.inputTokens,
  outputTokens: o.usage.outputTokens,
  costUsd: Math.round(o.usage.costUsd * 1e6) / 1e6,
  activeSeconds: Math.round(o.usage.activeMs / 100) / 10,
  steps: o.usage.steps,
});

/**
 * The tool result the parent's model reads: for a completed child its answer, stop reason, actions and
 * usage; for any other end an error naming why, with the actions it ran and what it used. Actions come
 * before the answer, so a cut long answer never hides them.
 */
export function childResult(o: ChildOutcome, maxChars: number): ToolResult {
  if (o.status === 'completed') {
    return boundResult(
      {
        agent: o.agent,
        stopReason: o.stopReason,
        actions: o.actions.map((a) => ({
          agent: a.agent,
          tool: a.tool,
          outcome: a.outcome,
          summary: a.summary,
          ...(a.decidedBy ? { decidedBy: a.decidedBy } : {}),
          ...(a.reason ? { reason: a.reason } : {}),
        })),
        usage: usageOf(o),
        answer: o.answer ?? '',
      },
      maxChars,
    );
  }
  const ended =
    o.status === 'cancelled'
      ? 'was cancelled'
      : o.status === 'failed'
        ? 'failed'
        : 'stopped before finishing';
  const actions =
    o.actions.length === 0
      ? 'It ran no write or notify action.'
      : `Its write/notify actions: ${o.actions.map(actionLine).join('; ')}.`;
  const used = usageOf(o);
  const message = `The sub-agent ${o.agent} ${ended} (${o.stopReason ?? o.status}): ${o.stopMessage ?? 'no reason given'} ${actions} It used ${used.inputTokens + used.outputTokens} tokens, $${used.costUsd}, ${used.activeSeconds} s in ${used.steps} steps.`;
  return errorResult(
    o.status === 'cancelled' ? 'cancelled' : 'subagent_failed',
    truncateText(message, maxChars).text,
  );
}

function recordOf(o: ChildOutcome): SubagentRecord {
  return {
    toolCallId: o.toolCallId,
    agent: o.agent,
    childRunId: o.childRunId,
    outcome: o.status,
    stopReason: o.stopReason,
    actions: o.actions,
    usage: o.usage,
  };
}

/** Records for the calls still handed over when a run ends: their children are to be cancelled. */
export function abandonedRecords(calls: readonly DelegatedCall[]): SubagentRecord[] {
  return calls.map((d) => ({
    toolCallId: d.toolCallId,
    agent: d.agent,
    childRunId: d.childRunId,
    outcome: 'abandoned',
    stopReason: null,
    actions: [],
  }));
}

/**
 * Fills the slots of the paused turn's sub-agent calls whose child runs ended, one by one: the result
 * the model reads, the record of the call, and the child's usage charged to this run (tokens and cost
 * added up; active time as the longest child of the turn). An outcome for a call that is not waiting
 * (already applied, or unknown) is ignored, so applying the same end twice changes nothing. The run
 * continues once nothing of the turn waits any more.
 */
export async function applyChildOutcomes(
  state: RunState,
  outcomes: readonly ChildOutcome[],
  deps: EngineDeps,
): Promise<StepOutcome> {
  if (state.status !== 'awaiting_approval' || !state.turn) {
    throw new RunStatusError(state.status, 'apply sub-agent results to');
  }
  let next = state;
  for (const o of outcomes) {
    const turn = next.turn!;
    const call = turn.delegated?.find((d) => d.toolCallId === o.toolCallId);
    if (!call) {
      deps.logger.warn(
        { runId: state.runId, toolCallId: o.toolCallId, childRunId: o.childRunId },
        'sub-agent result for a call that is not waiting',
      );
      continue;
    }
    const now = deps.clock.now();
    const result = childResult(o, next.limits.maxObservationChars);
    const longest = turn.delegatedActiveMs ?? 0;
    const evidence: Evidence[] = result.ok
      ? [
          {
            toolCallId: call.toolCallId,
            tool: call.tool,
            kind: 'result',
            ok: true,
            summary: summarise(result),
            at: now,
          },
        ]
      : [];
    next = {
      ...next,
      turn: {
        ...setSlot(turn, call.toolCallId, result),
        delegated: (turn.delegated ?? []).filter((d) => d.toolCallId !== call.toolCallId),
        delegatedActiveMs: Math.max(longest, o.usage.activeMs),
      },
      usage: {
        ...next.usage,
        inputTokens: next.usage.inputTokens + o.usage.inputTokens,
        outputTokens: next.usage.outputTokens + o.usage.outputTokens,
        costUsd: next.usage.costUsd + o.usage.costUsd,
        activeMs: next.usage.activeMs + Math.max(0, o.usage.activeMs - longest),
      },
      evidence: evidence.length > 0 ? next.evidence.concat(evidence) : next.evidence,
      subagents: (next.subagents ?? []).concat(recordOf(o)),
      updatedAt: now,
    };
    deps.emit({
      type: 'subagent_finished',
      runId: state.runId,
      toolCallId: call.toolCallId,
      agent: call.agent,
      childRunId: o.childRunId,
      outcome: o.status,
      durationMs: Math.max(0, now - call.at),
    });
  }
  // Nothing ran while applying them (the children did their work), so one save at the end suffices: a
  // crash before it applies the same ends again.
  return continueWhenSettled(next, deps, next !== state);
}

/**
 * The paused turn after some of its calls got their results: still waiting while a gated call has no
 * decision or a child has not ended (saved first when `saveWaiting`); otherwise its results are appended
 * in call order, the run goes on (its active-time clock restarts) and that is saved.
 */
export async function continueWhenSettled(
  state: RunState,
  deps: EngineDeps,
  saveWaiting = false,
): Promise<StepOutcome> {
  const turn = state.turn!;
  const delegated = turn.delegated ?? [];
  if (turn.pending.length > 0 || delegated.length > 0) {
    if (saveWaiting && deps.checkpoint) await deps.checkpoint(state);
    return {
      type: 'interruption',
      state,
      gated: turn.pending,
      ...(delegated.length > 0 ? { delegated } : {}),
    };
  }
  const now = deps.clock.now();
  const resumed: RunState = {
    ...flushTurn(state),
    status: 'running',
    ...NOT_ENDED,
    usage: { ...state.usage, activeSince: now },
    updatedAt: now,
  };
  if (deps.checkpoint) await deps.checkpoint(resumed);
  return { type: 'run_again', state: resumed };
}
