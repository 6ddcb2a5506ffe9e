/**
 * `/loopgate help | status | cancel <run id> | approvals`. Every answer is ephemeral (only the caller sees
 * it) and returned in the command's ack, so nothing goes through response_url.
 */
import { isFinished } from '../loop/state.js';
import { type Grant, grantScopeText } from '../policy/grants.js';
import { context, type KnownBlock, section } from '../slack/block-kit.js';
import { escapeMrkdwn, slackDate } from '../slack/mrkdwn.js';
import { isRunId } from '../store/index.js';
import { mayCancel, requestRunCancel } from './cancel.js';
import type { BotContext } from './context.js';
import { revokeGrant } from './grants.js';
import type { SlashCommand } from './slack-payloads.js';
import { approvalLine, approvalsFor, lineSections, runLine } from './summaries.js';

export const SLASH_COMMAND = '/loopgate';

interface CommandReply {
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

const HELP_TEXT = [
  '*loopgate* answers questions in threads, and asks an approver before it changes anything.',
  '• Mention me in a channel, or send me a direct message, to ask something. Reply in the thread to follow up.',
  '• `/loopgate status`: the runs of this channel (working, waiting for whom, finished).',
  '• `/loopgate approvals`: the approvals waiting for you, with links to their cards.',
  '• `/loopgate cancel <run id>`: stop a run (its requester or one of its approvers).',
  '• `/loopgate grants`: the grants in force here and yours ("Approve and allow similar calls"); `/loopgate grants revoke <grant id>` ends one.',
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
    case 'grants':
      return grants(ctx, command, args);
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

/** The grants in force in this channel and those the caller made, deduplicated, soonest expiry first. */
async function grantsHere(ctx: BotContext, command: SlashCommand): Promise<Grant[]> {
  const now = ctx.clock.now();
  const [here, mine] = await Promise.all([
    ctx.store.grants.list({ channel: { teamId: command.team_id, channelId: command.channel_id } }, now),
    ctx.store.grants.list({ user: { teamId: command.team_id, userId: command.user_id } }, now),
  ]);
  const byId = new Map([...here, ...mine].map((g) => [g.grantId, g]));
  return [...byId.values()].sort((a, b) => a.expiresAt - b.expiresAt);
}

async function grants(ctx: BotContext, command: SlashCommand, args: string[]): Promise<CommandReply> {
  const found = await grantsHere(ctx, command);
  if (args[0]?.toLowerCase() === 'revoke') {
    if (!args[1]) return reply('Usage: `/loopgate grants revoke <grant id>` (see `/loopgate grants`).');
    return reply(await revokeGrant(ctx, found.find((g) => g.grantId === args[1]) ?? null, command.user_id));
  }
  if (found.length === 0) return reply('No grants are in force in this channel, and you have made none.');
  const lines = found.map(
    (g) =>
      `\`${g.grantId}\` · ${grantScopeText(g)} <#${g.channelId}> · granted by <@${g.grantedBy}> · until ${slackDate(g.expiresAt)}`,
  );
  const title = '*Grants in force* (here, and yours): `/loopgate grants revoke <id>` ends one';
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
  // The same answer whether the run does not exist or is not the caller's: it tells nothing about others' runs.
  if (!run || !(await mayCancel(ctx, command.user_id, run))) return reply(CANNOT_CANCEL);
  if (isFinished(run.state)) return reply(`Run \`${runId}\` already ended (${run.state.status}).`);
  await requestRunCancel(ctx, run, command.user_id, 'command');
  const text = `Cancelling run \`${runId}\`: it stops at its next step, and its pending approvals are cancelled.`;
  return reply(text, [
    section(text),
    context('The thread shows the run as cancelled once a worker has stopped it.'),
  ]);
}

const CANNOT_CANCEL = 'You cannot cancel that run, or it does not exist.';
