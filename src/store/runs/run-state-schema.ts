import { z } from 'zod';
import type { CompactionRecord } from '../../loop/context-window.js';
import type { Message } from '../../loop/messages.js';
import type { Evidence, RunState } from '../../loop/run-state.js';
import { RUN_STATE_VERSION } from '../../loop/run-state.js';
import type { ToolResult } from '../../loop/tool-result.js';

/**
 * zod schemas of the engine's RunState as the store keeps it: the header (everything but `messages`
 * and `evidence`), one message, one evidence record. Objects are strict: a field this code does not
 * know means the format changed without a version bump, and loading refuses it rather than dropping it.
 * The type checks at the bottom fail to compile when the engine's types (src/loop/run-state.ts and the
 * files it imports) and these schemas drift apart.
 */

const toolCall = z.strictObject({ id: z.string(), name: z.string(), arguments: z.string() });

export const messageSchema = z.discriminatedUnion('role', [
  z.strictObject({ role: z.literal('system'), content: z.string() }),
  z.strictObject({ role: z.literal('user'), content: z.string(), name: z.string().optional() }),
  z.strictObject({
    role: z.literal('assistant'),
    content: z.string().nullable(),
    toolCalls: z.array(toolCall).optional(),
  }),
  z.strictObject({ role: z.literal('tool'), toolCallId: z.string(), name: z.string(), content: z.string() }),
]);

export const evidenceSchema = z.strictObject({
  toolCallId: z.string(),
  tool: z.string(),
  kind: z.enum(['result', 'verification']),
  ok: z.boolean(),
  summary: z.string(),
  at: z.number(),
});

const retriedAttempt = z.strictObject({
  attempt: z.number(),
  code: z.string(),
  message: z.string(),
  delayMs: z.number(),
});

const editedArguments = z.strictObject({ by: z.string().optional(), note: z.string(), args: z.unknown() });

export const toolResultSchema = z.union([
  z.strictObject({
    ok: z.literal(true),
    data: z.unknown(),
    truncated: z
      .strictObject({
        totalChars: z.number(),
        keptHeadChars: z.number(),
        keptTailChars: z.number(),
        lines: z.strictObject({ total: z.number(), head: z.number(), tail: z.number() }).optional(),
        handle: z.string().optional(),
      })
      .optional(),
    verification: z.strictObject({ ok: z.boolean(), summary: z.string() }).optional(),
    attempts: z.array(retriedAttempt).optional(),
    edited: editedArguments.optional(),
  }),
  z.strictObject({
    ok: z.literal(false),
    error: z.strictObject({ code: z.string(), message: z.string(), transient: z.boolean().optional() }),
    attempts: z.array(retriedAttempt).optional(),
    edited: editedArguments.optional(),
  }),
]);

const price = z.strictObject({
  inputPerMTok: z.number(),
  outputPerMTok: z.number(),
  cachedInputPerMTok: z.number().optional(),
});

/** A tool's plan of a call (src/loop/plan.ts); also kept on approval records. */
export const callPlanSchema = z.union([
  z.strictObject({ ok: z.literal(true), text: z.string(), hash: z.string() }),
  z.strictObject({ ok: z.literal(false), error: z.string() }),
]);

const gatedCall = z.strictObject({
  toolCallId: z.string(),
  tool: z.string(),
  effect: z.enum(['write', 'notify']),
  args: z.unknown(),
  argsHash: z.string(),
  preview: z.string().optional(),
  plan: callPlanSchema.optional(),
  reason: z.string().optional(),
  idempotent: z.boolean(),
});

/** Sub-agent parts of a run (src/loop/delegate.ts); every one optional, absent in runs without them. */
const childCaps = z.strictObject({ maxTokens: z.number(), maxCostUsd: z.number(), deadlineMs: z.number() });
const delegatedCall = z.strictObject({
  toolCallId: z.string(),
  tool: z.string(),
  agent: z.string(),
  childRunId: z.string(),
  task: z.string(),
  context: z.string().optional(),
  caps: childCaps,
  at: z.number(),
});
const agentLink = z.strictObject({
  name: z.string(),
  parentRunId: z.string(),
  parentToolCallId: z.string(),
  depth: z.number(),
  lineage: z.array(z.string()),
});
const childUsage = z.strictObject({
  inputTokens: z.number(),
  outputTokens: z.number(),
  costUsd: z.number(),
  activeMs: z.number(),
  steps: z.number(),
});

export const runStatusSchema = z.enum([
  'running',
  'awaiting_approval',
  'completed',
  'failed',
  'stopped',
  'cancelled',
]);

export const stopReasonSchema = z.enum([
  'completed',
  'max_steps',
  'deadline',
  'token_budget',
  'cost_budget',
  'loop_detected',
  'tool_errors',
  'model_error',
  'validation_failed',
  'output_limit',
  'content_filter',
  'refused',
  'internal_error',
  'context_overflow',
  'cancelled',
]);

const extendableStop = z.enum(['max_steps', 'deadline', 'token_budget', 'cost_budget']);
const budgetIncrease = z.strictObject({
  steps: z.number().optional(),
  deadlineMs: z.number().optional(),
  tokens: z.number().optional(),
  costUsd: z.number().optional(),
});

const actionRecord = z.strictObject({
  toolCallId: z.string(),
  tool: z.string(),
  argsHash: z.string(),
  outcome: z.enum([
    'succeeded',
    'failed',
    'rejected',
    'expired',
    'cancelled',
    'outcome_unknown',
    'not_executed',
  ]),
  decidedBy: z.string().optional(),
  reason: z.string().optional(),
  summary: z.string(),
});

export const runHeaderStateSchema = z.strictObject({
  version: z.literal(RUN_STATE_VERSION),
  runId: z.string(),
  status: runStatusSchema,
  requester: z.strictObject({
    userId: z.string(),
    teamId: z.string().optional(),
    timeZone: z.string().optional(),
  }),
  question: z.string(),
  step: z.number(),
  usage: z.strictObject({
    inputTokens: z.number(),
    outputTokens: z.number(),
    cachedInputTokens: z.number().optional(),
    costUsd: z.number(),
    activeMs: z.number(),
    activeSince: z.number().nullable(),
  }),
  limits: z.strictObject({
    maxSteps: z.number(),
    deadlineMs: z.number(),
    maxTokens: z.number(),
    maxReplyTokens: z.number(),
    maxCostUsd: z.number(),
    prices: z.record(z.string(), price),
    defaultPrice: price,
    maxConsecutiveToolErrors: z.number(),
    maxIdenticalCalls: z.number(),
    // Defaults for runs stored before these limits existed: the engine's defaults of that time.
    maxToolCallsPerReply: z.number().default(16),
    maxGatedCallsPerPause: z.number().default(5),
    maxObservationChars: z.number(),
    toolTimeoutMs: z.number(),
    maxAnswerRetries: z.number(),
    maxAnswerChars: z.number(),
    context: z
      .strictObject({
        windowTokens: z.number(),
        compactAtPercent: z.number(),
        summaryTokens: z.number(),
        maxStoredResultBytes: z.number(),
        maxStoredBytesPerRun: z.number(),
      })
      .optional(),
    maxAgentDepth: z.number().optional(),
    maxParallelAgents: z.number().optional(),
    extend: z
      .strictObject({
        steps: z.number(),
        deadlineMs: z.number(),
        tokens: z.number(),
        costUsd: z.number(),
        times: z.number(),
      })
      .optional(),
  }),
  turn: z
    .strictObject({
      slots: z.array(
        z.strictObject({ toolCallId: z.string(), tool: z.string(), result: toolResultSchema.nullable() }),
      ),
      pending: z.array(gatedCall),
      delegated: z.array(delegatedCall).optional(),
      delegatedActiveMs: z.number().optional(),
    })
    .nullable(),
  actions: z.array(actionRecord),
  rejected: z.record(
    z.string(),
    z.strictObject({ by: z.string().optional(), reason: z.string().optional() }),
  ),
  brakes: z.strictObject({
    consecutiveToolErrors: z.number(),
    lastCallSignature: z.string().nullable(),
    identicalCalls: z.number(),
  }),
  answerRetries: z.number(),
  answer: z.array(z.string()).nullable(),
  stopReason: stopReasonSchema.nullable(),
  stopMessage: z.string().nullable(),
  createdAt: z.number(),
  updatedAt: z.number(),
  context: z.strictObject({ tokenRatio: z.number(), refusals: z.number().optional() }).optional(),
  agent: agentLink.optional(),
  subagents: z
    .array(
      z.strictObject({
        toolCallId: z.string(),
        agent: z.string(),
        childRunId: z.string(),
        outcome: z.enum(['completed', 'failed', 'stopped', 'cancelled', 'abandoned']),
        stopReason: stopReasonSchema.nullable(),
        actions: z.array(actionRecord.extend({ agent: z.string() })),
        usage: childUsage.optional(),
      }),
    )
    .optional(),
  budgetAsk: z
    .strictObject({
      round: z.number(),
      reason: extendableStop,
      message: z.string(),
      offer: budgetIncrease,
      at: z.number(),
    })
    .nullable()
    .optional(),
  extensions: z
    .array(
      z.strictObject({
        round: z.number(),
        reason: extendableStop,
        added: budgetIncrease,
        by: z.string(),
        at: z.number(),
      }),
    )
    .optional(),
});

/** One compaction record (its own append-only list). */
export const compactionSchema = z.strictObject({
  upTo: z.number().int().min(1),
  messages: z.number().int().min(1),
  summary: z.string(),
  notes: z.string(),
  step: z.number(),
  at: z.number(),
  tokensBefore: z.number(),
  tokensAfter: z.number(),
  calls: z.number(),
  usage: z.strictObject({
    inputTokens: z.number(),
    outputTokens: z.number(),
    cachedInputTokens: z.number().optional(),
  }),
  costUsd: z.number(),
  model: z.string().optional(),
});

/** The RunState without its append-only parts (messages, evidence, compactions): what the header stores. */
export type RunHeaderState = Omit<RunState, 'messages' | 'evidence' | 'compactions'>;

/** T with every optional property made required, at every depth (so a missing optional field shows). */
type AllKeys<T> = T extends string | number | boolean | null | undefined
  ? T
  : T extends object
    ? { [K in keyof T]-?: AllKeys<T[K]> }
    : T;

/** True when A and B accept the same values and name the same properties (mutual assignability). */
type Same<A, B> = [AllKeys<A>] extends [AllKeys<B>]
  ? [AllKeys<B>] extends [AllKeys<A>]
    ? true
    : false
  : false;

export const schemasMatchEngineTypes: [
  Same<z.output<typeof runHeaderStateSchema>, RunHeaderState>,
  Same<z.output<typeof messageSchema>, Message>,
  Same<z.output<typeof evidenceSchema>, Evidence>,
  Same<z.output<typeof toolResultSchema>, ToolResult>,
  Same<z.output<typeof compactionSchema>, CompactionRecord>,
] = [true, true, true, true, true];
