/**
 * A run's trace as terminal text: the run, its steps with tool calls (effect, duration, arguments,
 * results cut to `maxChars`), the approvals with their execution ledger, and the answer or stop reason.
 */

import type { BudgetAsk, BudgetExtension } from '../loop/budget-asks.js';
import { increaseText } from '../loop/budget-extension.js';
import type { RunState } from '../loop/run-state.js';
import type { AgentLink } from '../loop/subagents.js';
import {
  compactionSentence,
  type TraceCompaction,
  type TraceStep,
  type TraceSubagent,
  type TraceToolCall,
} from '../slack/trace.js';
import type { FeedbackRecord } from '../store/feedback/feedback-store.js';
import type { ApprovalRecord, LedgerRecord, SlackContext } from '../store/index.js';
import { duration, shorten, utc } from './format.js';

export interface TraceReport {
  run: {
    runId: string;
    status: RunState['status'];
    stopReason: RunState['stopReason'];
    stopMessage: RunState['stopMessage'];
    requester: string;
    slack: SlackContext;
    question: string;
    step: number;
    usage: RunState['usage'];
    createdAt: number;
    updatedAt: number;
    finishedAt: number | null;
    cancelRequest: { by: string; at: number } | null;
    /** Set on a sub-agent's run: whose call it answers. */
    agent?: AgentLink;
    /** More budget people granted (budgets.extend), oldest first; absent: none. */
    extensions?: BudgetExtension[];
    /** The ask for more budget the run waits on; absent or null: none. */
    budgetAsk?: BudgetAsk | null;
  };
  steps: TraceStep[];
  /** Compactions of the run's history, each after the step it followed. */
  compactions: TraceCompaction[];
  approvals: Array<ApprovalRecord & { execution: LedgerRecord | null }>;
  /** Tool call ids of gated calls waiting for a decision. */
  awaitingDecision: string[];
  /** The accepted final answer, its Slack-sized parts joined; null when there is none. */
  answer: string | null;
  /** Feedback people gave on the answer (the feedback buttons), oldest first. */
  feedback: FeedbackRecord[];
}

function callLines(call: TraceToolCall, waiting: boolean, maxChars: number): string[] {
  const facts = [call.tool];
  if (call.effect) facts.push(`[${call.effect}]`);
  if (call.durationMs !== undefined) facts.push(duration(call.durationMs));
  if (call.result === undefined) facts.push(waiting ? 'waiting for approval' : 'no result yet');
  else if (call.ok !== undefined) facts.push(call.ok ? 'ok' : 'FAILED');
  if (call.approval) {
    const by = call.approval.decidedBy ? ` by ${call.approval.decidedBy}` : '';
    facts.push(`(${call.approval.outcome}${by}${call.approval.reason ? `: ${call.approval.reason}` : ''})`);
  }
  const lines = [`  - ${facts.join(' ')}`];
  if (call.untrustedDescription !== undefined) {
    lines.push(
      `      tool described by its server (untrusted): ${shorten(call.untrustedDescription, maxChars)}`,
    );
  }
  lines.push(`      args:   ${shorten(call.args, maxChars)}`);
  if (call.result !== undefined) lines.push(`      result: ${shorten(call.result, maxChars)}`);
  if (call.subagent) lines.push(...subagentLines(call.subagent, maxChars));
  return lines;
}

/** A sub-agent call's child run, indented under the call: how it ended, then its own steps. */
function subagentLines(sub: TraceSubagent, maxChars: number): string[] {
  const view = sub.trace;
  if (!view) return [`      sub-agent ${sub.agent}, run ${sub.runId}: trace not available`];
  const u = view.usage;
  const used = u
    ? ` (${view.steps.length} steps, ${u.inputTokens + u.outputTokens} tokens, $${u.costUsd.toFixed(4)}, active ${duration(u.activeMs)})`
    : '';
  const head = `      sub-agent ${sub.agent}, run ${sub.runId}: ${view.status}${view.stopReason ? ` (${view.stopReason})` : ''}${used}`;
  const steps = view.steps.flatMap((step) => stepLines(step, new Set(), maxChars));
  return [head, ...steps.map((line) => `      | ${line}`)];
}

function stepLines(step: TraceStep, waiting: ReadonlySet<string>, maxChars: number): string[] {
  const took =
    step.durationMs === undefined && step.model === undefined
      ? ''
      : ` (model${step.model ? ` ${step.model}` : ''}${step.durationMs === undefined ? '' : ` ${duration(step.durationMs)}`})`;
  const lines = [`Step ${step.step}${took}`];
  if (step.text) lines.push(`  says: ${shorten(step.text, maxChars)}`);
  for (const call of step.calls) lines.push(...callLines(call, waiting.has(call.toolCallId), maxChars));
  return lines;
}

function approvalLine(a: TraceReport['approvals'][number]): string {
  const decided =
    a.status === 'pending'
      ? `pending, expires ${utc(a.expiresAt)}`
      : `${a.status}${a.decidedBy ? ` by ${a.decidedBy}` : ''}${a.decidedAt ? ` at ${utc(a.decidedAt)}` : ''}`;
  const reason = a.decisionReason ? ` (${a.decisionReason})` : '';
  const executed = a.execution ? `; execution ${a.execution.status}` : '';
  return `  - ${a.tool} [${a.effect}] ${a.approvalId}: ${decided}${reason}${executed}; args sha256 ${a.argsHash.slice(0, 12)}…`;
}

/** What a paused run waits for: decisions, its sub-agents, or both. */
function waitingText(report: TraceReport): string {
  const children = report.steps.at(-1)?.calls.filter((c) => c.subagent && c.result === undefined).length ?? 0;
  if (children === 0) return 'Waiting for approval.';
  const agents = `${children} sub-agent${children === 1 ? '' : 's'}`;
  return report.awaitingDecision.length > 0
    ? `Waiting for approval and for ${agents}.`
    : `Waiting for ${agents}.`;
}

/** The run's own lines: status, where, when, usage, and what changed its course (cancel, budget). */
function headerLines(run: TraceReport['run']): string[] {
  const usage = run.usage;
  const lines = [
    `Run ${run.runId}: ${run.status}${run.stopReason ? ` (${run.stopReason})` : ''}`,
    `  requester ${run.requester}, channel ${run.slack.teamId}/${run.slack.channelId}, thread ${run.slack.threadTs}`,
    `  created ${utc(run.createdAt)}, updated ${utc(run.updatedAt)}${run.finishedAt ? `, finished ${utc(run.finishedAt)}` : ''}`,
    `  ${run.step} model calls, ${usage.inputTokens} input${usage.cachedInputTokens ? ` (${usage.cachedInputTokens} cached)` : ''} + ${usage.outputTokens} output tokens, $${usage.costUsd.toFixed(4)}, active ${duration(usage.activeMs)}`,
  ];
  if (run.cancelRequest)
    lines.push(`  cancel requested by ${run.cancelRequest.by} at ${utc(run.cancelRequest.at)}`);
  if (run.agent) {
    lines.push(
      `  sub-agent ${run.agent.name} (depth ${run.agent.depth}) answering call ${run.agent.parentToolCallId} of run ${run.agent.parentRunId}`,
    );
  }
  for (const g of run.extensions ?? []) {
    lines.push(`  budget extended (${g.reason}) by ${g.by} at ${utc(g.at)}: ${increaseText(g.added)}`);
  }
  return lines;
}

/** How the run stopped, or what it waits for; nothing for a run that completed. */
function endingLines(report: TraceReport): string[] {
  const { run } = report;
  if (run.stopReason === 'completed') return [];
  if (run.stopReason !== null) {
    return [`Stopped: ${run.stopReason}${run.stopMessage ? `: ${run.stopMessage}` : ''}`];
  }
  if (run.budgetAsk)
    return [`Waiting for more budget (${run.budgetAsk.reason}): ${increaseText(run.budgetAsk.offer)}?`];
  return [run.status === 'awaiting_approval' ? waitingText(report) : 'Not finished yet.'];
}

function feedbackLines(report: TraceReport, maxChars: number): string[] {
  if (report.feedback.length === 0) return [];
  return [
    '',
    'Feedback:',
    ...report.feedback.map((f) => {
      const comment = f.comment ? `: ${shorten(f.comment, maxChars)}` : '';
      return `  - ${f.value} from ${f.userId} at ${utc(f.at)}${comment}`;
    }),
  ];
}

export function traceText(report: TraceReport, maxChars: number): string {
  const { run } = report;
  const lines = headerLines(run);
  lines.push('', `Question: ${shorten(run.question, maxChars)}`, '');
  if (report.steps.length === 0) lines.push('No model calls yet.');
  const waiting = new Set(report.awaitingDecision);
  const compactedAfter = (step: number) =>
    report.compactions
      .filter((c) => c.afterStep === step)
      .map((c) => `  [${compactionSentence(c, duration)}]`);
  lines.push(...compactedAfter(0));
  for (const step of report.steps) {
    lines.push(...stepLines(step, waiting, maxChars), ...compactedAfter(step.step));
  }
  if (report.approvals.length > 0) {
    lines.push('', 'Approvals:');
    for (const a of report.approvals) lines.push(approvalLine(a));
  }
  lines.push('');
  if (report.answer !== null) lines.push('Answer:', ...report.answer.split('\n').map((l) => `  ${l}`));
  lines.push(...endingLines(report), ...feedbackLines(report, maxChars));
  return `${lines.join('\n')}\n`;
}
