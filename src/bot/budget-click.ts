/**
 * Continue / Stop on a run's ask for more budget (src/slack/budget-card.ts). Checked at the click with the
 * policy in force now: the ask exists, the click came from its card, the card is of the run's current
 * round, the clicker may answer (the requester for steps, time and tokens; for cost the budget's
 * approvers; anyone who may answer, and the requester, may Stop), and it is still open. The answer is
 * recorded by compare-and-set (first answer wins, audited), then the run gets a `budget_resume` job whose
 * id names the round, so double clicks, two deciders and Slack's retries grant nothing twice.
 */
import { ZodError } from 'zod';
import { approverMentions } from '../approvers/mentions.js';
import { isApprover } from '../approvers/resolve.js';
import { budgetDeciders, deciderIds } from '../config/budget-extend.js';
import { addRunJob } from '../queue/index.js';
import { budgetCard, budgetCardView, parseBudgetButtonValue } from '../slack/budget-card.js';
import { slackDate, userMention } from '../slack/mrkdwn.js';
import type { BudgetAskRecord } from '../store/budget/budget-ask-store.js';
import { tellClicker } from './approvals.js';
import type { BotContext } from './context.js';
import { withRetries } from './retry.js';
import type { ClickTarget } from './slack-payloads.js';

type Answer = 'granted' | 'refused';

const NOTHING = 'Nothing was changed.';

/** Why this ask can no longer be answered, or null while it is open. */
function closedBudgetText(record: BudgetAskRecord, now: number): string | null {
  const by = record.decidedBy ? ` by ${userMention(record.decidedBy)}` : '';
  const at = record.decidedAt === undefined ? '' : ` ${slackDate(record.decidedAt)}`;
  switch (record.status) {
    case 'pending':
      return now >= record.expiresAt
        ? `This ask for more budget expired ${slackDate(record.expiresAt)}. ${NOTHING}`
        : null;
    case 'granted':
      return `More budget was already granted${by}${at}. ${NOTHING}`;
    case 'refused':
      return `More budget was already refused${by}${at}. ${NOTHING}`;
    case 'expired':
      return `This ask for more budget expired${at} without an answer. ${NOTHING}`;
    case 'cancelled':
      return `The run was cancelled${by}${at}. ${NOTHING}`;
  }
}

/** Whether the clicker may give `answer`, judged now; a sentence saying why not, or null. */
async function refusal(
  ctx: BotContext,
  record: BudgetAskRecord,
  userId: string,
  answer: Answer,
): Promise<string | null> {
  const extend = ctx.policy.budgets.extend;
  if (answer === 'granted' && !extend) {
    return `More budget may no longer be granted (budgets.extend was removed from the policy). ${NOTHING}`;
  }
  if (answer === 'refused' && userId === record.requester) return null;
  const deciders = budgetDeciders(extend, ctx.policy.approvals.approvers, record.reason, record.requester);
  const verdict = await isApprover(deciders, userId, ctx);
  if (verdict.ok) return null;
  if (verdict.reason === 'lookup_failed') {
    return `I could not check your user groups with Slack; please try again in a moment. ${NOTHING}`;
  }
  const who = approverMentions(deciders).join(', ') || 'nobody';
  return `You may not answer this ask for more budget; it can be answered by ${who}. ${NOTHING}`;
}

/** The checks before an answer is recorded; the record, or the sentence the clicker is told. */
async function checkBudgetClick(
  ctx: BotContext,
  target: ClickTarget,
  answer: Answer,
): Promise<{ ok: true; record: BudgetAskRecord } | { ok: false; message: string }> {
  const ref = parseBudgetButtonValue(target.value);
  if (!ref) return { ok: false, message: 'This button does not carry a valid budget ask.' };
  const record = await ctx.store.budgetAsks.get(ref.runId);
  if (!record) return { ok: false, message: `I cannot find this ask for more budget any more. ${NOTHING}` };
  if (record.round !== ref.round) {
    return { ok: false, message: `This card is of an earlier ask for more budget. ${NOTHING}` };
  }
  if (!record.cardChannel || !record.cardTs) {
    return { ok: false, message: `This card is still being set up; try again in a moment. ${NOTHING}` };
  }
  if (record.cardChannel !== target.channelId || record.cardTs !== target.messageTs) {
    return { ok: false, message: `This button does not belong to the card it was clicked on. ${NOTHING}` };
  }
  const refused = await refusal(ctx, record, target.userId, answer);
  if (refused) return { ok: false, message: refused };
  const closed = closedBudgetText(record, ctx.clock.now());
  return closed ? { ok: false, message: closed } : { ok: true, record };
}

/** Continue (`granted`) or Stop (`refused`) clicked on a budget card. */
export async function budgetClicked(ctx: BotContext, target: ClickTarget, answer: Answer): Promise<void> {
  const check = await checkBudgetClick(ctx, target, answer);
  if (!check.ok) return tellClicker(ctx, target, check.message);
  const { runId, round } = check.record;
  const result = await ctx.store.budgetAsks.decide({
    runId,
    round,
    decision: answer,
    by: target.userId,
    now: ctx.clock.now(),
  });
  if (result.outcome !== 'unchanged') redrawBudgetCard(ctx, result.record);
  if (result.outcome !== 'decided') {
    const closed = closedBudgetText(result.record, ctx.clock.now());
    return tellClicker(ctx, target, closed ?? `This ask was already answered. ${NOTHING}`);
  }
  ctx.logger.info({ runId, round, answer, decidedBy: target.userId }, 'budget ask answered');
  await withRetries(() => addRunJob(ctx.queue, { name: 'budget_resume', data: { v: 1, runId, round } }), {
    delaysMs: ctx.enqueueRetryDelaysMs,
    retryable: (err) => !(err instanceof ZodError),
    onRetry: (err, retry) =>
      ctx.logger.warn({ runId, round, err, retry }, 'could not queue the budget resume'),
  }).catch(async (err: unknown) => {
    // The answer is recorded: the expiry timer will still bring the run on.
    ctx.logger.error({ runId, round, err }, 'budget answer recorded but its resume could not be queued');
    await tellClicker(
      ctx,
      target,
      'Your answer was recorded, but the run will only go on when the ask expires.',
    );
  });
}

function redrawBudgetCard(ctx: BotContext, record: BudgetAskRecord): void {
  const { cardChannel, cardTs } = record;
  if (!cardChannel || !cardTs) return;
  const ids = deciderIds(
    budgetDeciders(
      ctx.policy.budgets.extend,
      ctx.policy.approvals.approvers,
      record.reason,
      record.requester,
    ),
  );
  const view = budgetCardView(record, ids);
  ctx.background.run(
    'update budget card',
    () => ctx.slack.updateMessage(cardChannel, cardTs, budgetCard(view)),
    { runId: record.runId, round: record.round },
  );
}
