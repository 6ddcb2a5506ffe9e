import type { Message } from './messages.js';
import type { RunLimits } from './run-limits.js';
import { RUN_STATE_VERSION, type RunState } from './run-state.js';
import type { Requester } from './tool-contract.js';

export const DEFAULT_LIMITS: RunLimits = {
  maxSteps: 12,
  deadlineMs: 300_000,
  maxTokens: 200_000,
  maxReplyTokens: 4_096,
  maxCostUsd: 0.5,
  prices: {},
  defaultPrice: { inputPerMTok: 0.4, outputPerMTok: 1.6 },
  maxConsecutiveToolErrors: 3,
  maxIdenticalCalls: 3,
  maxToolCallsPerReply: 16,
  maxGatedCallsPerPause: 5,
  maxObservationChars: 16_000,
  toolTimeoutMs: 30_000,
  maxAnswerRetries: 2,
  maxAnswerChars: 36_000,
};

interface NewRun {
  runId: string;
  requester: Requester;
  systemPrompt: string;
  /** Earlier turns of the same Slack thread, oldest first (user and assistant text only). */
  history?: Message[];
  question: string;
  /**
   * Words for the model put before the question in its message, such as the current time: anything that
   * changes from run to run goes here, never into the system prompt, so the system prompt and the tools
   * stay one prefix that servers cache across runs.
   */
  questionNote?: string;
  limits?: Partial<RunLimits>;
  now: number;
}

/** The note that tells the model the time (it has no clock of its own). */
export const currentTimeNote = (now: number): string => `Current time (UTC): ${new Date(now).toISOString()}.`;

export function createRun(input: NewRun): RunState {
  return {
    version: RUN_STATE_VERSION,
    runId: input.runId,
    status: 'running',
    requester: input.requester,
    question: input.question,
    messages: [
      { role: 'system', content: input.systemPrompt },
      ...(input.history ?? []),
      {
        role: 'user',
        content: input.questionNote ? `${input.questionNote}\n\n${input.question}` : input.question,
      },
    ],
    step: 0,
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, activeMs: 0, activeSince: input.now },
    limits: { ...DEFAULT_LIMITS, ...input.limits },
    turn: null,
    actions: [],
    evidence: [],
    rejected: {},
    brakes: { consecutiveToolErrors: 0, lastCallSignature: null, identicalCalls: 0 },
    answerRetries: 0,
    answer: null,
    stopReason: null,
    stopMessage: null,
    createdAt: input.now,
    updatedAt: input.now,
  };
}

export const isFinished = (s: RunState): boolean =>
  s.status === 'completed' || s.status === 'failed' || s.status === 'stopped' || s.status === 'cancelled';
