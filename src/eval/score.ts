/** Turns a trial's transcript into its stored record: the graders' verdicts and the metrics. */

import { falseClaims } from './graders/claims.js';
import {
  describeClaims,
  grade,
  minefieldsHit,
  notNeededByRule,
  notNeededByTask,
  personAsked,
} from './graders/grade.js';
import type { TrialMetrics, TrialRecord } from './results.js';
import type { LoadedTask } from './suite.js';
import type { CallRecord, Transcript } from './transcript.js';

const clip = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

const text = (args: unknown) => (typeof args === 'string' ? args : JSON.stringify(args));

/** `[deployer] run_action {…} → succeeded, as edited: {…}`: who called, what, what came of it. */
function callLine(c: CallRecord): string {
  const end = c.outcome ?? (c.ok ? 'ok' : (c.code ?? 'failed'));
  const edited = c.editedArgs === undefined ? '' : `, as edited: ${clip(text(c.editedArgs), 200)}`;
  return `${c.agent ? `[${c.agent}] ` : ''}${c.tool} ${clip(text(c.args), 200)} → ${end}${edited}`;
}

function metricsOf(task: LoadedTask, t: Transcript): TrialMetrics {
  const sum = (pick: (r: Transcript['runs'][number]) => number) => t.runs.reduce((s, r) => s + pick(r), 0);
  const everyRun = [...t.runs, ...t.children.map((c) => c.state)];
  return {
    // A parent is charged its children's tokens and cost (src/loop/delegate.ts), not their steps.
    steps: sum((r) => r.step) + t.children.reduce((s, c) => s + c.state.step, 0),
    inputTokens: sum((r) => r.usage.inputTokens),
    cachedInputTokens: sum((r) => r.usage.cachedInputTokens ?? 0),
    outputTokens: sum((r) => r.usage.outputTokens),
    costUsd: sum((r) => r.usage.costUsd),
    wallMs: t.wallMs,
    stopReason: t.stopReason,
    approvalsAsked: personAsked(t).length,
    approvalsByRule: t.asked.filter((a) => a.decidedBy === 'rule').length,
    notNeededTask: notNeededByTask(task, t),
    notNeededRule: notNeededByRule(t),
    minefieldsHit: minefieldsHit(task, t),
    falseClaims: describeClaims(falseClaims(t.answer, t)),
    answerRejections: t.answerRejections,
    toolRetries: t.toolRetries,
    compactions: everyRun.reduce((s, r) => s + (r.compactions?.length ?? 0), 0),
    subagentRuns: t.children.length,
  };
}

export interface TrialId {
  model: string;
  task: LoadedTask;
  trial: number;
}

/** `taskHash`: the version of the task the record stands for (default its hash; runner.ts taskHashOf). */
export function recordOf(id: TrialId, t: Transcript, taskHash = id.task.hash): TrialRecord {
  const graders = grade(id.task, t);
  return {
    model: id.model,
    task: id.task.spec.id,
    trial: id.trial,
    taskHash,
    passed: graders.every((g) => g.passed),
    graders,
    metrics: metricsOf(id.task, t),
    answer: t.answer,
    calls: t.calls.map(callLine),
    at: new Date().toISOString(),
  };
}

/** The record of a trial the runner could not carry out (a bad policy, a crash): failed, run again next time. */
export function errorRecord(
  id: TrialId,
  error: unknown,
  wallMs: number,
  taskHash = id.task.hash,
): TrialRecord {
  const message = error instanceof Error ? error.message : String(error);
  return {
    model: id.model,
    task: id.task.spec.id,
    trial: id.trial,
    taskHash,
    passed: false,
    graders: [],
    metrics: {
      steps: 0,
      inputTokens: 0,
      cachedInputTokens: 0,
      outputTokens: 0,
      costUsd: 0,
      wallMs,
      stopReason: null,
      approvalsAsked: 0,
      approvalsByRule: 0,
      notNeededTask: 0,
      notNeededRule: 0,
      minefieldsHit: [],
      falseClaims: [],
      answerRejections: 0,
      toolRetries: 0,
      compactions: 0,
      subagentRuns: 0,
    },
    answer: null,
    calls: [],
    error: message,
    at: new Date().toISOString(),
  };
}
