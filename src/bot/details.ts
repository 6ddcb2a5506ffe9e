/**
 * The Details button (on approval cards and final answers; its value is the run id) opens the run's trace:
 * steps, tool calls, arguments, durations, results and approvals, built from the stored run and the
 * durations its trace recorded.
 */
import { z } from 'zod';
import { type TraceTimings, traceFromRunState } from '../slack/trace.js';
import { traceModal } from '../slack/trace-modal.js';
import { isRunId, type TraceEntry } from '../store/index.js';
import type { BotContext } from './context.js';
import type { ClickTarget } from './slack-payloads.js';

const effect = z.enum(['read', 'write', 'notify']);
const modelReplied = z.looseObject({
  type: z.literal('model_replied'),
  step: z.number().int(),
  durationMs: z.number(),
});
const toolStarted = z.looseObject({ type: z.literal('tool_started'), toolCallId: z.string(), effect });
const toolFinished = z.looseObject({
  type: z.literal('tool_finished'),
  toolCallId: z.string(),
  effect,
  durationMs: z.number(),
});

/** Durations and effects recorded in a run's trace (engine events); entries of other kinds are skipped. */
export function timingsFromTrace(entries: readonly TraceEntry[]): Required<TraceTimings> {
  const steps: Record<number, number> = {};
  const tools: Record<string, number> = {};
  const effects: Record<string, z.infer<typeof effect>> = {};
  for (const entry of entries) {
    const replied = modelReplied.safeParse(entry);
    if (replied.success) steps[replied.data.step] = replied.data.durationMs;
    const started = toolStarted.safeParse(entry);
    if (started.success) effects[started.data.toolCallId] = started.data.effect;
    const finished = toolFinished.safeParse(entry);
    if (finished.success) {
      tools[finished.data.toolCallId] = finished.data.durationMs;
      effects[finished.data.toolCallId] = finished.data.effect;
    }
  }
  return { steps, tools, effects };
}

/**
 * Opens the trace modal of the run named by the button. A run that is gone, or a button whose run lives in
 * another conversation than the click, gets an ephemeral note instead.
 */
export async function detailsClicked(ctx: BotContext, target: ClickTarget): Promise<void> {
  const tell = (text: string) =>
    target.channelId
      ? ctx.slack.ephemeral(
          { channel: target.channelId, user: target.userId, threadTs: target.threadTs },
          text,
        )
      : Promise.resolve();
  const runId = target.value;
  const run = isRunId(runId) ? await ctx.store.runs.loadRun(runId) : null;
  if (!run) return tell('I cannot find this run any more (finished runs are kept for a limited time).');
  if (target.channelId && run.slack.channelId !== target.channelId) {
    return tell('This Details button belongs to a run of another conversation, so it was ignored.');
  }
  const trace = await ctx.store.runs.readTrace(runId);
  await ctx.slack.openView(
    target.triggerId,
    traceModal(traceFromRunState(run.state, timingsFromTrace(trace))),
  );
}
