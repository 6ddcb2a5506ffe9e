/**
 * One-line summaries of runs and pending approvals, in mrkdwn, shared by the slash command and App Home:
 * what a run is doing (working, waiting for whom, how it ended) and where each approval's card is.
 */
import type { KnownBlock } from '../slack/block-kit.js';
import { section } from '../slack/block-kit.js';
import { SLACK_LIMITS } from '../slack/limits.js';
import { escapeMrkdwn, slackDate, truncate, userMention } from '../slack/mrkdwn.js';
import type { ApprovalRecord, RunSummary } from '../store/index.js';
import { approversText, mayDecide } from './approvers.js';
import type { BotContext } from './context.js';

const code = (text: string) => `\`${escapeMrkdwn(text)}\``;

async function cardLink(ctx: BotContext, approval: ApprovalRecord, label: string): Promise<string> {
  const link = approval.card ? await ctx.slack.permalink(approval.card.channel, approval.card.ts) : undefined;
  return link ? `<${link}|${label}>` : label;
}

/** A run's line: its status in words, and for a paused run what it waits for and who may decide. */
export async function runLine(ctx: BotContext, run: RunSummary): Promise<string> {
  const head = `${code(run.runId)} · started ${slackDate(run.createdAt)}`;
  switch (run.status) {
    case 'running':
      return `:hourglass_flowing_sand: ${head} · *working* (step ${run.step})`;
    case 'awaiting_approval': {
      const pending = (await ctx.store.approvals.listForRun(run.runId)).filter((a) => a.status === 'pending');
      if (pending.length === 0) {
        // Not waiting for a card of its own: for the sub-agents it asked (their cards are in its thread).
        const loaded = await ctx.store.runs.loadRun(run.runId);
        const agents = [...new Set((loaded?.state.turn?.delegated ?? []).map((d) => d.agent))];
        if (agents.length > 0) {
          return `:hourglass_flowing_sand: ${head} · *waiting for its sub-agents* ${agents.map(code).join(', ')}`;
        }
      }
      const waits = await Promise.all(
        pending.map(async (a) => {
          const tool = await cardLink(ctx, a, code(a.tool));
          return `${tool} by ${approversText(a.approvers)}`;
        }),
      );
      return `:raised_hand: ${head} · *waiting for approval* of ${waits.join('; ') || 'a call'}`;
    }
    case 'completed':
      return `:white_check_mark: ${head} · *finished*`;
    case 'failed':
    case 'stopped':
    case 'cancelled':
      return `:x: ${head} · *${run.status}*${run.stopReason ? ` (${run.stopReason.replace(/_/g, ' ')})` : ''}`;
  }
}

/** A pending approval's line: tool, requester, expiry and a link to its card. */
export async function approvalLine(ctx: BotContext, approval: ApprovalRecord): Promise<string> {
  const where = approval.card ? ` in <#${approval.card.channel}>` : '';
  const open = await cardLink(ctx, approval, 'open the card');
  return (
    `${code(approval.tool)} (${approval.effect}) asked by ${userMention(approval.requester)}${where}` +
    ` · expires ${slackDate(approval.expiresAt)} · ${open}`
  );
}

/** Pending approvals `userId` may approve now, soonest expiry first. */
export async function approvalsFor(
  ctx: BotContext,
  userId: string,
  limit: number,
): Promise<ApprovalRecord[]> {
  const pending = await ctx.store.approvals.listPending(ctx.clock.now(), 100);
  const verdicts = await Promise.all(
    pending.map((approval) => mayDecide(ctx.policy, approval, userId, 'approve', ctx)),
  );
  return pending.filter((_, i) => verdicts[i]?.ok).slice(0, limit);
}

/** One section per line (each cut to a section's limit), so a long list never breaks a message. */
export function lineSections(lines: readonly string[]): KnownBlock[] {
  return lines.map((line) => section(truncate(line, SLACK_LIMITS.sectionText, '…')));
}
