import { traceTree } from '../../agents/trace-tree.js';
import { isRunId } from '../../store/index.js';
import { parseCommandLine, positiveInt } from '../args.js';
import type { Command } from '../command.js';
import { CliError, UsageError } from '../errors.js';
import { json, write } from '../format.js';
import { type TraceReport, traceText } from '../trace-text.js';

const help = `Usage: loopgate trace <runId> [--max-chars N] [--json]

Shows one run: who asked what where, each step with its tool calls (effect, duration, arguments and
results), each compaction of its history (messages replaced, tokens before and after, the summary's
size and cost), the approvals with who decided and whether the call executed, and the final answer or
the reason the run stopped. A sub-agent call shows its child run's steps indented under it; a child's
own run id shows it alone.

  --max-chars N   cut arguments, results and texts to N characters (default 300; --json never cuts)
  --json          print the whole trace as one JSON document`;

const options = { 'max-chars': { type: 'string' }, json: { type: 'boolean' } } as const;

export const traceCommand: Command = {
  name: 'trace',
  help,
  async run(argv, ctx) {
    const line = parseCommandLine(argv, options, help, { min: 1, max: 1 });
    if (line === null) return write(ctx.stdout, `${help}\n`).then(() => 0);
    const runId = line.positionals[0] as string;
    const maxChars = positiveInt(line.values['max-chars'], 'max-chars', 1_000_000, 300, help);
    if (!isRunId(runId)) throw new UsageError(`not a run id: ${JSON.stringify(runId)}`, help);
    const store = await ctx.store();
    const loaded = await store.runs.loadRun(runId);
    if (loaded === null) {
      throw new CliError(`no run ${runId} (it never existed, or it ended more than RETENTION_DAYS days ago)`);
    }
    const [entries, approvals, feedback] = await Promise.all([
      store.runs.readTrace(runId),
      store.approvals.listForRun(runId),
      store.feedback.forRun(runId),
    ]);
    const executions = await Promise.all(
      approvals.map((a) =>
        a.status === 'approved' ? store.ledger.get(a.approvalId) : Promise.resolve(null),
      ),
    );
    const { state } = loaded;
    const view = await traceTree(store.runs, state, entries);
    const report: TraceReport = {
      run: {
        runId,
        status: state.status,
        stopReason: state.stopReason,
        stopMessage: state.stopMessage,
        requester: state.requester.userId,
        slack: loaded.slack,
        question: state.question,
        step: state.step,
        usage: state.usage,
        createdAt: state.createdAt,
        updatedAt: state.updatedAt,
        finishedAt: loaded.finishedAt,
        cancelRequest: loaded.cancelRequest,
        ...(state.agent ? { agent: state.agent } : {}),
        ...(state.extensions ? { extensions: state.extensions } : {}),
        ...(state.budgetAsk ? { budgetAsk: state.budgetAsk } : {}),
      },
      steps: view.steps,
      compactions: view.compactions ?? [],
      approvals: approvals.map((a, i) => ({ ...a, execution: executions[i] ?? null })),
      awaitingDecision: (state.turn?.pending ?? []).map((call) => call.toolCallId),
      answer: state.answer === null ? null : state.answer.join('\n'),
      feedback,
    };
    await write(ctx.stdout, line.values.json ? json(report) : traceText(report, maxChars));
    return 0;
  },
};
