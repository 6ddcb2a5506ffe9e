/**
 * The Details modal: a run's steps, tool calls with their arguments, durations and (truncated) results,
 * and the approvals. Modals take mrkdwn only (no `markdown` block) and at most 100 blocks, so a long run
 * shows its first and last steps with a note about the ones left out.
 */
import { context, type KnownBlock, type ModalView, plainText, section } from './block-kit.js';
import { CALLBACK_IDS } from './ids.js';
import { SLACK_LIMITS } from './limits.js';
import {
  escapeAndTruncate,
  escapeKeepingUserMentions,
  preformatted,
  showInvisible,
  truncate,
  userMention,
} from './mrkdwn.js';
import { STOP_REASON_SENTENCE } from './stop-reason.js';
import {
  compactionSentence,
  type TraceCompaction,
  type TraceStep,
  type TraceSubagent,
  type TraceToolCall,
  type TraceView,
} from './trace.js';

const ARGS_CHARS = 900;
const RESULT_CHARS = 1_200;
const STEP_TEXT_CHARS = 1_500;
/** An MCP server's description on a tool's first call; the full text (up to 1,000) is in the card. */
const DESCRIPTION_CHARS = 400;
/** Calls shown per step; the rest are counted. Keeps one step well under the block budget. */
const MAX_CALLS_PER_STEP = 20;

function formatDuration(ms: number): string {
  return ms < 1_000 ? `${Math.round(ms)} ms` : `${(ms / 1_000).toFixed(1)} s`;
}

/** Steps of a sub-agent shown in its parent's trace: the first and the last ones. */
const MAX_CHILD_STEPS = 4;
const CHILD_TEXT_CHARS = 300;

function usageFacts(view: TraceView): string[] {
  const facts = [`${view.steps.length} step${view.steps.length === 1 ? '' : 's'}`];
  if (view.usage) {
    const { inputTokens, outputTokens, costUsd, activeMs } = view.usage;
    facts.push(
      `${inputTokens + outputTokens} tokens`,
      `$${costUsd.toFixed(4)}`,
      `${formatDuration(activeMs)} active`,
    );
  }
  return facts;
}

/** One step of a sub-agent, quoted under its parent's call: what it said and each call's outcome. */
function childStepBlock(step: TraceStep, label: string): KnownBlock {
  const lines = [
    `*${label} · step ${step.step}*${step.durationMs === undefined ? '' : ` · ${formatDuration(step.durationMs)}`}`,
  ];
  if (step.text?.trim()) lines.push(escapeAndTruncate(step.text.trim(), CHILD_TEXT_CHARS));
  for (const call of step.calls.slice(0, MAX_CALLS_PER_STEP)) {
    const facts = [`\`${escapeAndTruncate(call.tool, 100, '…')}\``];
    if (call.durationMs !== undefined) facts.push(formatDuration(call.durationMs));
    if (call.ok !== undefined) facts.push(call.ok ? 'ok' : 'failed');
    if (call.result === undefined) facts.push('no result yet');
    if (call.approval) facts.push(`approval: ${call.approval.outcome.replace(/_/g, ' ')}`);
    lines.push(facts.join(' · '));
    if (call.result !== undefined) lines.push(escapeAndTruncate(call.result, CHILD_TEXT_CHARS));
  }
  const quoted = lines
    .join('\n')
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
  return section(truncate(quoted, SLACK_LIMITS.sectionText, '…'));
}

/**
 * A sub-agent call's child run under the call: a line naming it (agent, run id, how it ended, what it
 * used), then its first and last steps quoted, each with its own sub-agents nested below it.
 */
function subagentBlocks(sub: TraceSubagent, path: readonly string[]): KnownBlock[] {
  const names = [...path, sub.agent];
  const label = names.map((n) => escapeAndTruncate(n, 60, '…')).join(' › ');
  const run = `run \`${escapeAndTruncate(sub.runId, 100, '…')}\``;
  const view = sub.trace;
  if (!view) return [context(`↳ *Sub-agent ${label}* · ${run} · _its trace is not available_`)];
  const blocks: KnownBlock[] = [
    context(
      `↳ *Sub-agent ${label}* · ${run} · *${view.status.replace(/_/g, ' ')}* · ${usageFacts(view).join(' · ')}`,
    ),
  ];
  const steps = view.steps;
  const shown =
    steps.length <= MAX_CHILD_STEPS
      ? steps
      : [...steps.slice(0, MAX_CHILD_STEPS / 2), ...steps.slice(-MAX_CHILD_STEPS / 2)];
  shown.forEach((step, i) => {
    if (steps.length > MAX_CHILD_STEPS && i === MAX_CHILD_STEPS / 2) {
      blocks.push(context(`> … ${steps.length - MAX_CHILD_STEPS} steps of ${label} not shown …`));
    }
    blocks.push(childStepBlock(step, label));
    for (const call of step.calls) if (call.subagent) blocks.push(...subagentBlocks(call.subagent, names));
  });
  return blocks;
}

/** A call's section, after its tool's outside description on the tool's first call (a context line). */
function callBlocks(call: TraceToolCall): KnownBlock[] {
  const described =
    call.untrustedDescription === undefined
      ? []
      : [
          context(
            `_Description of \`${escapeAndTruncate(call.tool, 100, '…')}\` from its server (untrusted, it decides nothing):_ ${escapeAndTruncate(showInvisible(call.untrustedDescription), DESCRIPTION_CHARS)}`,
          ),
        ];
  return [...described, callBlock(call), ...(call.subagent ? subagentBlocks(call.subagent, []) : [])];
}

function callBlock(call: TraceToolCall): KnownBlock {
  const facts = [`\`${escapeAndTruncate(call.tool, 100, '…')}\``];
  if (call.effect) facts.push(call.effect);
  if (call.durationMs !== undefined) facts.push(formatDuration(call.durationMs));
  if (call.ok !== undefined) facts.push(call.ok ? ':white_check_mark: ok' : ':x: failed');
  if (call.result === undefined) facts.push(':hourglass: no result yet');

  const lines = [facts.join(' · '), `*Arguments*\n${preformatted(call.args, ARGS_CHARS)}`];
  if (call.result !== undefined) lines.push(`*Result*\n${preformatted(call.result, RESULT_CHARS)}`);
  if (call.approval) {
    const who = call.approval.decidedBy ? ` by ${userMention(call.approval.decidedBy)}` : '';
    const why = call.approval.reason ? `: ${escapeAndTruncate(call.approval.reason, 300)}` : '';
    lines.push(`*Approval:* ${call.approval.outcome.replace(/_/g, ' ')}${who}${why}`);
  }
  return section(lines.join('\n'));
}

function stepBlocks(step: TraceStep): KnownBlock[] {
  const title = `*Step ${step.step}*${step.durationMs === undefined ? '' : ` · ${formatDuration(step.durationMs)}`}${
    step.model ? ` · ${escapeAndTruncate(step.model, 100)}` : ''
  }`;
  const text = step.text?.trim() ? `\n${escapeAndTruncate(step.text.trim(), STEP_TEXT_CHARS)}` : '';
  const blocks: KnownBlock[] = [section(`${title}${text}`)];
  blocks.push(...step.calls.slice(0, MAX_CALLS_PER_STEP).flatMap(callBlocks));
  const hidden = step.calls.length - MAX_CALLS_PER_STEP;
  if (hidden > 0) blocks.push(context(`… and ${hidden} more calls in this step`));
  return blocks;
}

/** Keeps whole steps from the start and the end within `budget` blocks, noting how many were left out. */
function fitSteps(groups: KnownBlock[][], budget: number): KnownBlock[] {
  const total = groups.reduce((n, g) => n + g.length, 0);
  if (total <= budget) return groups.flat();
  const room = budget - 1; // one block for the omission note
  const head: KnownBlock[][] = [];
  const tail: KnownBlock[][] = [];
  let used = 0;
  let first = 0;
  let last = groups.length - 1;
  // Alternate head and tail so both the start of the run and how it ended stay visible.
  for (let takeHead = true; first <= last; takeHead = !takeHead) {
    const group = takeHead ? groups[first] : groups[last];
    if (!group || used + group.length > room) break;
    used += group.length;
    if (takeHead) head.push(groups[first++] ?? []);
    else tail.unshift(groups[last--] ?? []);
  }
  const omitted = last - first + 1;
  return [
    ...head.flat(),
    context(`… ${omitted} step${omitted === 1 ? '' : 's'} not shown …`),
    ...tail.flat(),
  ];
}

function summary(view: TraceView): KnownBlock[] {
  const parent = view.agent
    ? [
        context(
          `Sub-agent \`${escapeAndTruncate(view.agent.name, 60, '…')}\` answering call \`${escapeAndTruncate(view.agent.parentToolCallId, 100, '…')}\` of run \`${escapeAndTruncate(view.agent.parentRunId, 100, '…')}\``,
        ),
      ]
    : [];
  const stop = view.stopReason
    ? ` · ${escapeKeepingUserMentions(truncate(view.stopMessage?.trim() || STOP_REASON_SENTENCE[view.stopReason], 450))}`
    : '';
  const blocks: KnownBlock[] = [
    section(
      `*Run* \`${escapeAndTruncate(view.runId, 200, '…')}\` · *${view.status.replace(/_/g, ' ')}*${stop}`,
    ),
  ];
  const facts = [`${view.steps.length} step${view.steps.length === 1 ? '' : 's'}`];
  const compacted = view.compactions?.length ?? 0;
  if (compacted > 0) facts.push(`context compacted ${compacted} time${compacted === 1 ? '' : 's'}`);
  if (view.usage) {
    const { inputTokens, outputTokens, cachedInputTokens, costUsd, activeMs } = view.usage;
    const cached = cachedInputTokens ? `, ${cachedInputTokens} of them cached` : '';
    facts.push(`${inputTokens + outputTokens} tokens (${inputTokens} in${cached}, ${outputTokens} out)`);
    facts.push(`$${costUsd.toFixed(4)}`);
    facts.push(`${formatDuration(activeMs)} active`);
  }
  blocks.push(context(facts.join(' · ')));
  if (view.feedback && view.feedback.length > 0) blocks.push(context(feedbackLine(view.feedback)));
  return [...blocks, ...parent];
}

/** Who found the answer helpful or not, with their comments, in one context line. */
function feedbackLine(feedback: NonNullable<TraceView['feedback']>): string {
  const each = feedback.map((f) => {
    const comment = f.comment ? ` "${escapeAndTruncate(f.comment, 200, '…')}"` : '';
    return `${f.value === 'good' ? ':thumbsup:' : ':thumbsdown:'} <@${f.userId}>${comment}`;
  });
  return truncate(`*Feedback:* ${each.join(' · ')}`, SLACK_LIMITS.contextText);
}

const compactionBlock = (c: TraceCompaction): KnownBlock =>
  context(`:compression: ${escapeAndTruncate(compactionSentence(c, formatDuration), 600)}`);

/** Each step's blocks, with the compactions that followed it (those before the first step lead it). */
function stepGroups(view: TraceView): KnownBlock[][] {
  const groups = view.steps.map(stepBlocks);
  for (const c of view.compactions ?? []) {
    const group = groups[Math.max(0, Math.min(groups.length - 1, c.afterStep - 1))];
    if (!group) continue;
    if (c.afterStep === 0) group.unshift(compactionBlock(c));
    else group.push(compactionBlock(c));
  }
  return groups;
}

export function traceModal(view: TraceView): ModalView {
  const head = summary(view);
  const steps =
    view.steps.length === 0
      ? [context('_No steps yet._')]
      : fitSteps(stepGroups(view), SLACK_LIMITS.viewBlocks - head.length);
  return {
    type: 'modal',
    callback_id: CALLBACK_IDS.trace,
    private_metadata: view.runId.slice(0, SLACK_LIMITS.privateMetadata),
    title: plainText('Run trace', SLACK_LIMITS.modalTitle),
    close: plainText('Close', SLACK_LIMITS.modalTitle),
    blocks: [...head, ...steps],
  };
}
