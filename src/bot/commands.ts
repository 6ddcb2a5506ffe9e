/**
 * `/loopgate help | status | cancel <run id> | approvals`. Every answer is ephemeral (only the caller sees
 * it) and returned in the command's ack, so nothing goes through response_url.
 */
import { approversFor } from '../config/policy-limits.js';
import { isFinished } from '../loop/state.js';
import { addRunJob } from '../queue/index.js';
import { context, type KnownBlock, section } from '../slack/block-kit.js';
import { escapeMrkdwn, userMention } from '../slack/mrkdwn.js';
import { isRunId } from '../store/index.js';
import { isApprover } from './approvers.js';
import type { BotContext } from './context.js';
import type { SlashCommand } from './slack-payloads.js';
import { approvalLine, approvalsFor, lineSections, runLine } from './summaries.js';

export const SLASH_COMMAND = '/loopgate';

export interface CommandReply {
  response_type: 'ephemeral';
  text: string;
  blocks: KnownBlock[];
}

/** Runs listed by `status`; approvals listed by `approvals`. */
const STATUS_RUNS = 10;
const LISTED_APPROVALS = 20;

const reply = (text: string, blocks: KnownBlock[] = [section(text)]): CommandReply => ({
  response_type: 'ephemeral',
  text,
  blocks,
});

export const HELP_TEXT = [
  '*loopgate* answers questions in threads, and asks an approver before it changes anything.',
  '• Mention me in a channel, or send me a direct message, to ask something. Reply in the thread to follow up.',
  '• `/loopgate status`: the runs of this channel (working, waiting for whom, finished).',
  '• `/loopgate approvals`: the approvals waiting for you, with links to their cards.',
  '• `/loopgate cancel <run id>`: stop a run (its requester or one of its approvers).',
  '• `/loopgate help`: this text.',
].join('\n');

export async function loopgateCommand(ctx: BotContext, command: SlashCommand): Promise<CommandReply> {
  const [sub = 'help', ...args] = command.text.trim().split(/\s+/).filter(Boolean);
  switch (sub.toLowerCase()) {
    case 'status':
      return status(ctx, command);
    case 'approvals':
      return approvals(ctx, command);
    case 'cancel':
      return cancel(ctx, command, args[0]);
    default:
      return reply(HELP_TEXT);
  }
}

async function status(ctx: BotContext, command: SlashCommand): Promise<CommandReply> {
  const runs = await ctx.store.index.recent(
    { channel: { teamId: command.team_id, channelId: command.channel_id } },
    STATUS_RUNS,
  );
  if (runs.length === 0) return reply('No recent runs in this conversation.');
  const lines = await Promise.all(runs.map((run) => runLine(ctx, run)));
  const title = `*Recent runs in this conversation* (newest first)`;
  return reply(`${title}\n${lines.join('\n')}`, [section(title), ...lineSections(lines)]);
}

async function approvals(ctx: BotContext, command: SlashCommand): Promise<CommandReply> {
  const mine = await approvalsFor(ctx, command.user_id, LISTED_APPROVALS);
  if (mine.length === 0) return reply('No approvals are waiting for you.');
  const lines = await Promise.all(mine.map((approval) => approvalLine(ctx, approval)));
  const title = `*Approvals waiting for you* (${mine.length}, soonest expiry first)`;
  return reply(`${title}\n${lines.join('\n')}`, [section(title), ...lineSections(lines)]);
}

async function cancel(
  ctx: BotContext,
  command: SlashCommand,
  runId: string | undefined,
): Promise<CommandReply> {
  if (!runId) return reply('Usage: `/loopgate cancel <run id>` (see `/loopgate status` for run ids).');
  if (!isRunId(runId)) return reply(`\`${escapeMrkdwn(runId)}\` is not a run id.`);
  const run = await ctx.store.runs.loadRun(runId);
  if (!run) return reply(`I cannot find run \`${runId}\` (finished runs are kept for a limited time).`);
  if (isFinished(run.state)) return reply(`Run \`${runId}\` already ended (${run.state.status}).`);
  if (!(await mayCancel(ctx, command.user_id, run.state.requester.userId, runId))) {
    return reply(
      `Only the person who asked (${userMention(run.state.requester.userId)}) or an approver of this run's tools can cancel run \`${runId}\`.`,
    );
  }
  const by = command.user_id;
  await ctx.store.runs.requestCancel(runId, { by, at: ctx.clock.now() });
  await addRunJob(ctx.queue, { name: 'cancel', data: { v: 1, runId, by } });
  ctx.logger.info({ runId, by }, 'run cancel requested');
  const text = `Cancelling run \`${runId}\`: it stops at its next step, and its pending approvals are cancelled.`;
  return reply(text, [
    section(text),
    context('The thread shows the run as cancelled once a worker has stopped it.'),
  ]);
}

/** The requester, an approver of any tool the run asked about, or a default approver. */
async function mayCancel(
  ctx: BotContext,
  userId: string,
  requester: string,
  runId: string,
): Promise<boolean> {
  if (userId === requester) return true;
  const tools = new Set((await ctx.store.approvals.listForRun(runId)).map((a) => a.tool));
  const defaults = ctx.policy.approvals.approvers;
  const sets = [
    ...[...tools].map((tool) => approversFor(ctx.policy, tool)),
    {
      users: defaults.filter((id) => !id.startsWith('S')),
      groups: defaults.filter((id) => id.startsWith('S')),
    },
  ];
  for (const approvers of sets) {
    if ((await isApprover(approvers, userId, ctx.groups)).ok) return true;
  }
  return false;
}
