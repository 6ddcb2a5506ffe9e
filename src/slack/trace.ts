/**
 * A run's trace as the Details modal shows it, and how to derive it from a stored RunState. Durations are
 * not part of RunState (they come from engine events), so the caller passes them in when it has them.
 */
import { z } from 'zod';
import type { ActionRecord } from '../loop/gated-calls.js';
import type { RunState } from '../loop/run-state.js';
import type { RunStatus, StopReason } from '../loop/run-status.js';
import type { AgentLink } from '../loop/subagents.js';
import type { ToolEffect } from '../loop/tool-contract.js';
import type { TraceEntry } from '../store/records.js';

export interface TraceToolCall {
  toolCallId: string;
  tool: string;
  effect?: ToolEffect;
  /** Arguments as the model wrote them (JSON text). */
  args: string;
  durationMs?: number;
  /** The tool message the model read; absent while the call waits. */
  result?: string;
  ok?: boolean;
  /** Present for gated calls that reached an end. */
  approval?: Pick<ActionRecord, 'outcome' | 'decidedBy' | 'reason'>;
  /** On a tool's first call in the trace: its description, when it came from outside (an MCP server). */
  untrustedDescription?: string;
  /** A sub-agent call: the child run answering it, and its own trace once loaded (src/agents/trace-tree.ts). */
  subagent?: TraceSubagent;
}

export interface TraceSubagent {
  agent: string;
  runId: string;
  /** The child's trace, nested; absent when it is gone or deeper than the tree shows. */
  trace?: TraceView;
}

export interface TraceStep {
  step: number;
  durationMs?: number;
  /** The model that answered this step (a fallback when the primary failed), when recorded. */
  model?: string;
  /** The assistant's text of that step (its final answer on the last step). */
  text?: string;
  calls: TraceToolCall[];
}

/** A compaction of the run's history (src/loop/compaction.ts), as the trace shows it. */
export interface TraceCompaction {
  /** The step after which it happened (0: before the first). */
  afterStep: number;
  at: number;
  /** Messages the summary replaced in what the model sees. */
  messagesReplaced: number;
  /** Estimated input tokens of the next request, before and after. */
  tokensBefore: number;
  tokensAfter: number;
  /** The summary the model wrote: its characters and (as billed) tokens. */
  summaryChars: number;
  summaryTokens: number;
  /** Model calls it took, and what they cost. */
  calls: number;
  costUsd: number;
  durationMs?: number;
  model?: string;
}

export interface TraceView {
  runId: string;
  status: RunStatus;
  stopReason: StopReason | null;
  stopMessage?: string | null;
  steps: TraceStep[];
  /** The compactions, oldest first; absent when there were none. */
  compactions?: TraceCompaction[];
  usage?: {
    inputTokens: number;
    outputTokens: number;
    /** Of the input, tokens the server read from its prompt cache; absent when it reported none. */
    cachedInputTokens?: number;
    costUsd: number;
    activeMs: number;
  };
  /** Set on a sub-agent's run: whose call it answers. */
  agent?: AgentLink;
  /** Feedback people gave on the answer (the feedback buttons), oldest first; absent: none. */
  feedback?: readonly TraceFeedback[];
}

export interface TraceFeedback {
  userId: string;
  value: 'good' | 'bad';
  at: number;
  comment?: string;
}

/** Durations recorded from engine events: by step number (1-based) and by tool call id. */
interface TraceTimings {
  steps?: Readonly<Record<number, number>>;
  tools?: Readonly<Record<string, number>>;
  effects?: Readonly<Record<string, ToolEffect>>;
  /** Descriptions of tools from outside loopgate (MCP servers), by tool name. */
  descriptions?: Readonly<Record<string, string>>;
  /** The model that answered, by step number. */
  models?: Readonly<Record<number, string>>;
  /** How long each compaction took, by its cut (`upTo`). */
  compactions?: Readonly<Record<number, number>>;
}

const effect = z.enum(['read', 'write', 'notify']);
const modelReplied = z.looseObject({
  type: z.literal('model_replied'),
  step: z.number().int(),
  durationMs: z.number(),
  model: z.string().optional(),
});
const toolStarted = z.looseObject({ type: z.literal('tool_started'), toolCallId: z.string(), effect });
const toolDescribed = z.looseObject({
  type: z.literal('tool_described'),
  tool: z.string(),
  text: z.string(),
});
const contextCompacted = z.looseObject({
  type: z.literal('context_compacted'),
  upTo: z.number().int(),
  durationMs: z.number(),
});
const toolFinished = z.looseObject({
  type: z.literal('tool_finished'),
  toolCallId: z.string(),
  effect,
  durationMs: z.number(),
});
const subagentFinished = z.looseObject({
  type: z.literal('subagent_finished'),
  toolCallId: z.string(),
  durationMs: z.number(),
});

/** Durations and effects recorded in a run's trace (engine events); entries of other kinds are skipped. */
export function timingsFromTrace(entries: readonly TraceEntry[]): Required<TraceTimings> {
  const steps: Record<number, number> = {};
  const tools: Record<string, number> = {};
  const effects: Record<string, z.infer<typeof effect>> = {};
  const descriptions: Record<string, string> = {};
  const models: Record<number, string> = {};
  const compactions: Record<number, number> = {};
  for (const entry of entries) {
    const compacted = contextCompacted.safeParse(entry);
    if (compacted.success) compactions[compacted.data.upTo] = compacted.data.durationMs;
    const described = toolDescribed.safeParse(entry);
    if (described.success) descriptions[described.data.tool] ??= described.data.text;
    const replied = modelReplied.safeParse(entry);
    if (replied.success) {
      steps[replied.data.step] = replied.data.durationMs;
      if (replied.data.model) models[replied.data.step] = replied.data.model;
    }
    const started = toolStarted.safeParse(entry);
    if (started.success) effects[started.data.toolCallId] = started.data.effect;
    const finished = toolFinished.safeParse(entry);
    if (finished.success) {
      tools[finished.data.toolCallId] = finished.data.durationMs;
      effects[finished.data.toolCallId] = finished.data.effect;
    }
    // A sub-agent call lasts from its hand-over to its child's end.
    const answered = subagentFinished.safeParse(entry);
    if (answered.success) tools[answered.data.toolCallId] = answered.data.durationMs;
  }
  return { steps, tools, effects, descriptions, models, compactions };
}

const OkFlag = z.object({ ok: z.boolean() });

function okOf(content: string): boolean | undefined {
  try {
    const parsed = OkFlag.safeParse(JSON.parse(content));
    return parsed.success ? parsed.data.ok : undefined;
  } catch {
    return undefined;
  }
}

export function traceFromRunState(state: RunState, timings: TraceTimings = {}): TraceView {
  const results = new Map<string, string>();
  for (const message of state.messages) {
    if (message.role === 'tool') results.set(message.toolCallId, message.content);
  }
  const actions = new Map(state.actions.map((a) => [a.toolCallId, a]));
  const children = new Map<string, TraceSubagent>();
  for (const s of state.subagents ?? []) children.set(s.toolCallId, { agent: s.agent, runId: s.childRunId });
  for (const d of state.turn?.delegated ?? [])
    children.set(d.toolCallId, { agent: d.agent, runId: d.childRunId });

  const steps: TraceStep[] = [];
  const shownDescriptions = new Set<string>();
  const descriptionOf = (tool: string): string | undefined => {
    const text = timings.descriptions?.[tool];
    if (text === undefined || shownDescriptions.has(tool)) return undefined;
    shownDescriptions.add(tool);
    return text;
  };
  for (const message of state.messages) {
    if (message.role !== 'assistant') continue;
    const step = steps.length + 1;
    steps.push({
      step,
      durationMs: timings.steps?.[step],
      ...(timings.models?.[step] ? { model: timings.models[step] } : {}),
      text: message.content ?? undefined,
      calls: (message.toolCalls ?? []).map((call) => {
        const result = results.get(call.id);
        const action = actions.get(call.id);
        const untrustedDescription = descriptionOf(call.name);
        const subagent = children.get(call.id);
        return {
          toolCallId: call.id,
          tool: call.name,
          effect: timings.effects?.[call.id],
          args: call.arguments,
          durationMs: timings.tools?.[call.id],
          result,
          ok: result === undefined ? undefined : okOf(result),
          approval: action && { outcome: action.outcome, decidedBy: action.decidedBy, reason: action.reason },
          ...(untrustedDescription === undefined ? {} : { untrustedDescription }),
          ...(subagent ? { subagent } : {}),
        };
      }),
    });
  }

  const { inputTokens, outputTokens, cachedInputTokens, costUsd, activeMs } = state.usage;
  const compactions = compactionsOf(state, timings);
  return {
    runId: state.runId,
    status: state.status,
    stopReason: state.stopReason,
    stopMessage: state.stopMessage,
    steps,
    ...(compactions.length > 0 ? { compactions } : {}),
    usage: {
      inputTokens,
      outputTokens,
      ...(cachedInputTokens ? { cachedInputTokens } : {}),
      costUsd,
      activeMs,
    },
    ...(state.agent ? { agent: state.agent } : {}),
  };
}

/** The run's compactions, each placed after the step (assistant message) that came before it. */
function compactionsOf(state: RunState, timings: TraceTimings): TraceCompaction[] {
  return (state.compactions ?? []).map((c) => {
    const afterStep = state.messages.slice(0, c.messages).filter((m) => m.role === 'assistant').length;
    const durationMs = timings.compactions?.[c.upTo];
    return {
      afterStep,
      at: c.at,
      messagesReplaced: c.upTo - 1,
      tokensBefore: c.tokensBefore,
      tokensAfter: c.tokensAfter,
      summaryChars: c.summary.length,
      summaryTokens: c.usage.outputTokens,
      calls: c.calls,
      costUsd: c.costUsd,
      ...(durationMs === undefined ? {} : { durationMs }),
      ...(c.model === undefined ? {} : { model: c.model }),
    };
  });
}

/** One line about a compaction, for the Details modal (mrkdwn-free words) and `loopgate trace`. */
export function compactionSentence(c: TraceCompaction, duration: (ms: number) => string): string {
  const facts = [
    `${c.messagesReplaced} earlier messages replaced by a summary of ${c.summaryChars} characters (${c.summaryTokens} tokens)`,
    `next request about ${c.tokensBefore} -> ${c.tokensAfter} tokens`,
    `${c.calls} model call${c.calls === 1 ? '' : 's'}${c.model ? ` (${c.model})` : ''}, $${c.costUsd.toFixed(4)}`,
  ];
  if (c.durationMs !== undefined) facts.push(duration(c.durationMs));
  return `Context compacted: ${facts.join('; ')}`;
}
