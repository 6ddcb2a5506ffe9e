import type { Message } from '../../src/loop/messages.js';
import type { RunState } from '../../src/loop/run-state.js';
import type { SlackContext } from '../../src/store/index.js';

export const T0 = 1_767_000_000_000;

export const slack: SlackContext = {
  teamId: 'T0TEAM',
  channelId: 'C0OPS',
  threadTs: '1767000000.000100',
  requestMessageTs: '1767000000.000100',
};

/** A run in the middle of its life: reads done, one write waiting for approval, evidence, usage. */
export function realisticState(runId: string): RunState {
  return {
    version: 1,
    runId,
    status: 'awaiting_approval',
    requester: { userId: 'U0ALICE', teamId: 'T0TEAM', timeZone: 'Europe/Berlin' },
    question: 'Restart payments in staging please',
    messages: [
      { role: 'system', content: 'You are loopgate, an operations assistant. Be brief.' },
      {
        role: 'user',
        content: 'payments looks slow, restart it in staging if the error rate is high',
        name: 'alice',
      },
      {
        role: 'assistant',
        content: null,
        toolCalls: [
          {
            id: 'call_1',
            name: 'prometheus_query',
            arguments: '{"query":"rate(http_errors_total{svc=\\"payments\\"}[5m])"}',
          },
          { id: 'call_2', name: 'http_get', arguments: '{"url":"https://status.internal.example/payments"}' },
        ],
      },
      {
        role: 'tool',
        toolCallId: 'call_1',
        name: 'prometheus_query',
        content: '{"ok":true,"data":{"value":0.27}}',
      },
      {
        role: 'tool',
        toolCallId: 'call_2',
        name: 'http_get',
        content: '{"ok":true,"data":{"status":"degraded"}}',
      },
      {
        role: 'assistant',
        content: 'The error rate is 27 %; I will restart payments in staging.',
        toolCalls: [
          {
            id: 'call_3',
            name: 'run_action',
            arguments: '{"action":"restart_service","service":"payments","env":"staging"}',
          },
        ],
      },
    ],
    step: 2,
    usage: { inputTokens: 1800, outputTokens: 240, costUsd: 0.0011, activeMs: 4200, activeSince: null },
    limits: {
      maxSteps: 12,
      deadlineMs: 300_000,
      maxTokens: 200_000,
      maxReplyTokens: 4096,
      maxCostUsd: 0.5,
      prices: { 'gpt-4.1-mini': { inputPerMTok: 0.4, outputPerMTok: 1.6 } },
      defaultPrice: { inputPerMTok: 0.4, outputPerMTok: 1.6 },
      maxConsecutiveToolErrors: 3,
      maxIdenticalCalls: 3,
      maxToolCallsPerReply: 16,
      maxGatedCallsPerPause: 5,
      maxObservationChars: 16_000,
      toolTimeoutMs: 30_000,
      maxAnswerRetries: 2,
      maxAnswerChars: 36_000,
    },
    turn: {
      slots: [{ toolCallId: 'call_3', tool: 'run_action', result: null }],
      pending: [
        {
          toolCallId: 'call_3',
          tool: 'run_action',
          effect: 'write',
          args: { action: 'restart_service', service: 'payments', env: 'staging' },
          argsHash: 'a'.repeat(64),
          preview: 'POST https://deploy.internal.example/api/restart/payments?env=staging',
          reason: 'The error rate is 27 %; I will restart payments in staging.',
          idempotent: false,
        },
      ],
    },
    actions: [
      {
        toolCallId: 'call_0',
        tool: 'post_message',
        argsHash: 'b'.repeat(64),
        outcome: 'rejected',
        decidedBy: 'U0BOB',
        reason: 'not now',
        summary: 'rejected by U0BOB',
      },
    ],
    evidence: [
      {
        toolCallId: 'call_1',
        tool: 'prometheus_query',
        kind: 'result',
        ok: true,
        summary: 'value 0.27',
        at: T0 + 1000,
      },
      {
        toolCallId: 'call_2',
        tool: 'http_get',
        kind: 'result',
        ok: true,
        summary: 'status degraded',
        at: T0 + 1200,
      },
    ],
    rejected: { [`post_message:${'b'.repeat(64)}`]: { by: 'U0BOB', reason: 'not now' } },
    brakes: {
      consecutiveToolErrors: 0,
      lastCallSignature: `run_action:${'a'.repeat(64)}`,
      identicalCalls: 1,
    },
    answerRetries: 0,
    answer: null,
    stopReason: null,
    stopMessage: null,
    createdAt: T0,
    updatedAt: T0 + 4200,
  };
}

/** A fresh run: system prompt and question only. */
export function newState(runId: string): RunState {
  const s = realisticState(runId);
  return {
    ...s,
    status: 'running',
    stopReason: null,
    stopMessage: null,
    messages: s.messages.slice(0, 2),
    step: 0,
    turn: null,
    actions: [],
    evidence: [],
    rejected: {},
    brakes: { consecutiveToolErrors: 0, lastCallSignature: null, identicalCalls: 0 },
    usage: { ...s.usage, activeSince: T0 },
  };
}

/** What one read step adds: an assistant message with a tool call and the tool's result (~400 bytes). */
export function stepMessages(i: number): Message[] {
  return [
    {
      role: 'assistant',
      content: `Step ${i}: checking the next metric.`,
      toolCalls: [
        { id: `call_s${i}`, name: 'prometheus_query', arguments: `{"query":"up{job=\\"svc-${i}\\"}"}` },
      ],
    },
    {
      role: 'tool',
      toolCallId: `call_s${i}`,
      name: 'prometheus_query',
      content: `{"ok":true,"data":{"resultType":"vector","result":[{"metric":{"job":"svc-${i}","instance":"10.0.0.${i % 250}:9100"},"value":[1767000000,"1"]}]}}`,
    },
  ];
}

/** The state after `steps` more read steps. */
export function advance(state: RunState, steps: number, now = state.updatedAt): RunState {
  const messages = [...state.messages];
  for (let i = 0; i < steps; i++) messages.push(...stepMessages(state.step + i + 1));
  return {
    ...state,
    messages,
    step: state.step + steps,
    usage: { ...state.usage, inputTokens: state.usage.inputTokens + 100 * steps },
    updatedAt: now + steps,
  };
}
