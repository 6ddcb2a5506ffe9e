import { executeApproved, type Resolution } from '../loop/decisions.js';
import type { Decision, GatedCall } from '../loop/gated-calls.js';
import type { EngineDeps } from '../loop/ports.js';
import type { RunState } from '../loop/run-state.js';
import type { Logger } from '../loop/tool-contract.js';
import type { ResumeJobData } from '../queue/job-data.js';
import { approvalViewFromRecord } from '../slack/approval-view.js';
import { escapeAndTruncate, userMention } from '../slack/mrkdwn.js';
import { RETRY_REASON } from '../store/approvals/approval-store.js';
import { storeExecutionLedger } from '../store/engine-ports.js';
import type { ApprovalRecord } from '../store/records.js';
import { slackContextOf } from './advance.js';
import { engineDeps } from './engine-deps.js';
import { againStatusOf } from './pause.js';
import { type AdvanceResult, withRunLease } from './run-lease.js';
import type { WorkerRuntime } from './runtime.js';
import { TraceRecorder } from './trace-recorder.js';

/** The gated call an approval record was made for, as the engine knows it. */
function callOf(record: ApprovalRecord): GatedCall {
  return {
    toolCallId: record.toolCallId,
    tool: record.tool,
    effect: record.effect,
    args: record.args,
    argsHash: record.argsHash,
    idempotent: record.idempotent,
    ...(record.preview ? { preview: record.preview } : {}),
    ...(record.plan ? { plan: record.plan } : {}),
    ...(record.reason ? { reason: record.reason } : {}),
  };
}

const SUMMARY_CHARS = 1_500;

/**
 * Once the call ran again: what the thread is told (Slack mrkdwn), what its card shows (plain text) and
 * what the thread's memory keeps.
 */
function rerunReport(
  record: ApprovalRecord,
  res: Resolution,
): { slack: string; memory: string; card: string } {
  const tool = `\`${escapeAndTruncate(record.tool, 100)}\``;
  const by = record.decidedBy ? `, approved again by ${userMention(record.decidedBy)}` : '';
  const summary = escapeAndTruncate(res.action.summary, SUMMARY_CHARS);
  const check = res.result.ok ? res.result.verification : undefined;
  const verified = check
    ? `\nCheck afterwards: ${check.ok ? 'passed' : 'FAILED'}: ${escapeAndTruncate(check.summary, 500)}`
    : '';
  let slack: string;
  switch (res.action.outcome) {
    case 'succeeded':
      slack = `:white_check_mark: Ran ${tool} again${by}: it succeeded.\n> ${summary}${verified}`;
      break;
    case 'failed':
      slack = `:x: Ran ${tool} again${by}: it failed.\n> ${summary}`;
      break;
    case 'outcome_unknown':
      slack =
        `:warning: ${tool} was started again${by}, but the worker stopped before recording its result: ` +
        'the outcome is unknown again. Check whether it took effect before approving it again.';
      break;
    default:
      slack = `:no_entry_sign: ${tool} was not run again: ${summary}`;
  }
  const card = `Ran again: ${res.action.outcome.replaceAll('_', ' ')}. ${res.action.summary}`;
  const after = record.decisionReason === RETRY_REASON ? 'a transient failure' : 'an unknown outcome';
  const memory = `[${record.tool} was run again after ${after}${record.decidedBy ? ` (approved by ${record.decidedBy})` : ''}: ${res.action.outcome}. ${res.action.summary}]`;
  return { slack, memory, card };
}

/**
 * A call approved again after its outcome was unknown ("Approve again", which creates the approval's
 * next round): runs it once more under the run's lease, through that round's ledger entry (so at most
 * once per round, and a crash leaves `outcome_unknown` again, never a blind repeat), then tells the
 * card, the thread and the thread's memory how it went. The run itself is not changed: it went on, and
 * usually ended, when the outcome was unknown; a follow-up question in the thread sees the outcome.
 */
export function rerunApproved(rt: WorkerRuntime, data: ResumeJobData, jobId: string): Promise<AdvanceResult> {
  const { runId, approvalId } = data;
  const log = rt.logger.child({ runId, jobId, approvalId });
  return withRunLease(rt, runId, jobId, log, async ({ fence }) => {
    const [loaded, record] = await Promise.all([
      rt.store.runs.loadRun(runId),
      rt.store.approvals.get(approvalId),
    ]);
    if (!loaded || record?.status !== 'approved') {
      log.warn({ found: Boolean(loaded), status: record?.status }, 'nothing approved to run again');
      return { type: 'done' };
    }
    if (await rt.store.approvals.wasReported(approvalId)) {
      log.info({}, 'already ran again and reported');
      return { type: 'done' };
    }
    // A job recovered after the run but before the report finds the ledger settled: the stored result
    // is reported, nothing runs.
    const res = await runOnce(rt, loaded.state, record, fence, log);
    const ctx = slackContextOf(loaded);
    const report = rerunReport(record, res);
    if (record.card) {
      const again = await againStatusOf(rt, approvalId, res.action.outcome);
      const view = approvalViewFromRecord(record, again ?? undefined, report.card);
      await rt.notifier.updateCard({ runId }, record.card, view);
    }
    // Remembered before it is told, so a follow-up written as soon as the note shows sees it.
    await rt.store.threads.appendTurns(
      { teamId: loaded.slack.teamId, channelId: loaded.slack.channelId, threadTs: loaded.slack.threadTs },
      [{ role: 'assistant', content: report.memory }],
    );
    await rt.notifier.note(ctx, report.slack);
    await rt.store.approvals.markReported(approvalId, rt.clock.now());
    log.info({ tool: record.tool, outcome: res.action.outcome }, 'approved call ran again');
    return { type: 'done' };
  });
}

/**
 * Running a call again cannot ask again in its run (the run went on): a plan that changed since it was
 * approved again means it is not run; the agent can be asked again in the thread.
 */
function planChangedOnRerun(record: ApprovalRecord): Resolution {
  const message = `Not run again: the plan of ${record.tool} changed since it was approved again. Ask again in the thread to see the new plan.`;
  const result = { ok: false as const, error: { code: 'plan_changed', message } };
  return {
    result,
    action: {
      toolCallId: record.toolCallId,
      tool: record.tool,
      argsHash: record.argsHash,
      outcome: 'not_executed',
      summary: message,
    },
    evidence: [],
  };
}

async function runOnce(
  rt: WorkerRuntime,
  state: RunState,
  record: ApprovalRecord,
  fence: number,
  log: Logger,
): Promise<Resolution> {
  const trace = new TraceRecorder(rt.store.runs, state.runId, rt.clock.now, rt.untrustedToolText);
  const deps: EngineDeps = {
    ...engineDeps(rt, log, trace),
    ledger: storeExecutionLedger(rt.store.ledger, {
      runId: state.runId,
      fence,
      clock: rt.clock,
      approvalIdOf: () => record.approvalId,
    }),
  };
  const decision: Decision = {
    kind: 'approved',
    toolCallId: record.toolCallId,
    argsHash: record.argsHash,
    ...(record.plan ? { plan: record.plan } : {}),
    ...(record.decidedBy ? { by: record.decidedBy } : {}),
  };
  try {
    const res = await executeApproved(state, callOf(record), decision, deps);
    return 'askAgain' in res ? planChangedOnRerun(record) : res;
  } finally {
    await trace.flush().catch((err: unknown) => log.warn({ err }, 'could not write the trace'));
  }
}
