/**
 * App Home: the approvals the viewer may decide (with links to their cards) and the viewer's recent runs.
 * Views take mrkdwn only and at most 100 blocks; both lists are capped well below that.
 */
import { context, header, type KnownBlock, section } from '../slack/block-kit.js';
import type { BotContext } from './context.js';
import { approvalLine, approvalsFor, lineSections, runLine } from './summaries.js';

const HOME_APPROVALS = 20;
const HOME_RUNS = 10;

const divider = (): KnownBlock => ({ type: 'divider' });

export async function homeBlocks(ctx: BotContext, teamId: string, userId: string): Promise<KnownBlock[]> {
  const [pending, runs] = await Promise.all([
    approvalsFor(ctx, userId, HOME_APPROVALS),
    ctx.store.index.recent({ user: { teamId, userId } }, HOME_RUNS),
  ]);
  const [approvalLines, runLines] = await Promise.all([
    Promise.all(pending.map((approval) => approvalLine(ctx, approval))),
    Promise.all(runs.map((run) => runLine(ctx, run))),
  ]);
  return [
    header('loopgate'),
    section(`*Approvals waiting for you* (${pending.length})`),
    ...(approvalLines.length > 0 ? lineSections(approvalLines) : [context('Nothing is waiting for you.')]),
    divider(),
    section('*Your recent runs*'),
    ...(runLines.length > 0 ? lineSections(runLines) : [context('You have not asked me anything recently.')]),
    divider(),
    context(
      'Mention me in a channel or send me a message to ask something. `/loopgate help` lists the commands.',
    ),
  ];
}

export async function homeOpened(ctx: BotContext, teamId: string, userId: string): Promise<void> {
  await ctx.slack.publishHome(userId, await homeBlocks(ctx, teamId, userId));
}
