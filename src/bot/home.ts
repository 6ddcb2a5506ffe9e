/**
 * App Home: the approvals the viewer may decide, each with the buttons its card has (every click checked on
 * the server exactly as on the card), the runs waiting on the viewer, the grants the viewer made (with
 * Revoke), and the viewer's recent runs. Views take mrkdwn only and at most 100 blocks; every list is capped
 * well below that. A click in App Home publishes it again, with what happened at the top.
 */
import { grantScopeText } from '../policy/grants.js';
import { actions, button, context, header, type KnownBlock, section } from '../slack/block-kit.js';
import { ACTION_IDS } from '../slack/ids.js';
import { slackDate, truncate } from '../slack/mrkdwn.js';
import { grantRef } from '../store/grants/grant-store.js';
import type { ApprovalRecord } from '../store/index.js';
import type { BotContext } from './context.js';
import { approvalLine, approvalsFor, lineSections, runLine } from './summaries.js';

const HOME_APPROVALS = 12;
const HOME_RUNS = 8;
const HOME_GRANTS = 10;

const divider = (): KnownBlock => ({ type: 'divider' });

/** The card's decision buttons for one approval. */
function approvalButtons(approval: ApprovalRecord): KnownBlock {
  const value = approval.approvalId;
  const breakGlass = button({ actionId: ACTION_IDS.breakGlass, text: 'Break glass…', value });
  const reject = button({ actionId: ACTION_IDS.reject, text: 'Reject', value, style: 'danger' });
  // A call a break-glass deny rule decided cannot be approved: as on its card, Break glass or Reject.
  if (approval.breakGlass === 'only') return actions(`home_${approval.approvalId}`, [breakGlass, reject]);
  return actions(`home_${approval.approvalId}`, [
    button({ actionId: ACTION_IDS.approve, text: 'Approve', value, style: 'primary' }),
    ...(approval.grantOffer && (approval.quorum ?? 1) <= 1
      ? [button({ actionId: ACTION_IDS.approveGrant, text: 'Approve and allow similar…', value })]
      : []),
    reject,
    ...(approval.schema ? [button({ actionId: ACTION_IDS.edit, text: 'Edit', value })] : []),
    ...(approval.breakGlass === 'offered' ? [breakGlass] : []),
  ]);
}

async function homeBlocks(
  ctx: BotContext,
  teamId: string,
  userId: string,
  notice?: string,
): Promise<KnownBlock[]> {
  const now = ctx.clock.now();
  const [pending, runs, grants] = await Promise.all([
    approvalsFor(ctx, userId, HOME_APPROVALS),
    ctx.store.index.recent({ user: { teamId, userId } }, HOME_RUNS),
    ctx.store.grants.list({ user: { teamId, userId } }, now),
  ]);
  const waitingRuns = [...new Set(pending.map((a) => a.runId))];
  const [approvalLines, runLines, waitingLines] = await Promise.all([
    Promise.all(pending.map((approval) => approvalLine(ctx, approval))),
    Promise.all(runs.map((run) => runLine(ctx, run))),
    Promise.all(
      waitingRuns.map(async (runId) => {
        const summary = (await ctx.store.index.summaries([runId]))[0];
        return summary ? runLine(ctx, summary) : `\`${runId}\``;
      }),
    ),
  ]);
  const grantBlocks = grants
    .slice(0, HOME_GRANTS)
    .flatMap((g): KnownBlock[] => [
      section(
        truncate(
          `\`${g.grantId}\` · ${grantScopeText(g)} <#${g.channelId}> · until ${slackDate(g.expiresAt)}`,
          2_900,
          '…',
        ),
      ),
      actions(`grant_${g.grantId}`, [
        button({ actionId: ACTION_IDS.revokeGrant, text: 'Revoke', value: grantRef(g), style: 'danger' }),
      ]),
    ]);
  return [
    header('loopgate'),
    ...(notice ? [section(truncate(notice, 2_900, '…'))] : []),
    section(`*Approvals waiting for you* (${pending.length})`),
    ...(pending.length > 0
      ? pending.flatMap((approval, i) => [
          ...lineSections([approvalLines[i] ?? '']),
          approvalButtons(approval),
        ])
      : [context('Nothing is waiting for you.')]),
    divider(),
    section('*Runs waiting on you*'),
    ...(waitingLines.length > 0 ? lineSections(waitingLines) : [context('No run is waiting on you.')]),
    divider(),
    section(`*Your grants* (${grants.length})`),
    ...(grantBlocks.length > 0 ? grantBlocks : [context('You have not allowed any similar calls.')]),
    divider(),
    section('*Your recent runs*'),
    ...(runLines.length > 0 ? lineSections(runLines) : [context('You have not asked me anything recently.')]),
    divider(),
    context(
      'Mention me in a channel or send me a message to ask something. `/loopgate help` lists the commands.',
    ),
  ];
}

export async function homeOpened(
  ctx: BotContext,
  teamId: string,
  userId: string,
  notice?: string,
): Promise<void> {
  await ctx.slack.publishHome(userId, await homeBlocks(ctx, teamId, userId, notice));
}
