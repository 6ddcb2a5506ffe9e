/**
 * The card of a run's ask for more budget (src/loop/budget-extension.ts): what ran out, what one grant
 * adds, who may answer, and Continue / Stop while it is pending; once answered, who answered and when.
 * The buttons carry only `<runId>/<round>`: the bot looks everything else up and checks it at the click.
 */

import type { BudgetIncrease, ExtendableStop } from '../loop/budget-asks.js';
import { increaseText } from '../loop/budget-extension.js';
import type { BudgetAskRecord } from '../store/budget/budget-ask-store.js';
import { actions, button, context, type KnownBlock, type SlackMessage, section } from './block-kit.js';
import { ACTION_IDS } from './ids.js';
import { SLACK_LIMITS } from './limits.js';
import { escapeAndTruncate, mention, slackDate, userMention } from './mrkdwn.js';

export interface BudgetCardView {
  runId: string;
  round: number;
  reason: ExtendableStop;
  /** The stop sentence the run ends with if nobody grants more. */
  message: string;
  offer: BudgetIncrease;
  status: 'pending' | 'granted' | 'refused' | 'expired' | 'cancelled';
  /** Slack user and group ids of who may answer. */
  deciders: readonly string[];
  expiresAt: number;
  decidedBy?: string | undefined;
  decidedAt?: number | undefined;
}

const BUDGET_NAMES: Record<ExtendableStop, string> = {
  max_steps: 'steps',
  deadline: 'working time',
  token_budget: 'tokens',
  cost_budget: 'cost',
};

/** The value of a budget card's buttons. */
export const budgetButtonValue = (runId: string, round: number): string => `${runId}/${round}`;

/** Reads a budget button's value; null for anything else. */
export function parseBudgetButtonValue(value: string): { runId: string; round: number } | null {
  const match = /^([A-Za-z0-9_-]{1,100})\/([1-9]\d{0,3})$/.exec(value);
  return match ? { runId: match[1] as string, round: Number(match[2]) } : null;
}

function outcomeLine(view: BudgetCardView): string {
  const by = view.decidedBy ? ` by ${userMention(view.decidedBy)}` : '';
  const at = view.decidedAt === undefined ? '' : ` ${slackDate(view.decidedAt)}`;
  switch (view.status) {
    case 'pending':
      return `${view.deciders.map(mention).join(', ')} may answer until ${slackDate(view.expiresAt)}.`;
    case 'granted':
      return `*Continued*${by}${at}: ${increaseText(view.offer)}.`;
    case 'refused':
      return `*Stopped*${by}${at}: no more budget.`;
    case 'expired':
      return `*Expired*${at} without an answer: the run stopped.`;
    case 'cancelled':
      return `*Cancelled*${at}: the run was cancelled.`;
  }
}

export function budgetCard(view: BudgetCardView): SlackMessage {
  const offer = increaseText(view.offer);
  const question = `The run used up its ${BUDGET_NAMES[view.reason]} budget. Continue with ${offer}?`;
  const value = budgetButtonValue(view.runId, view.round);
  const blocks: KnownBlock[] = [
    section(`*More budget?* ${escapeAndTruncate(question, SLACK_LIMITS.sectionText - 20)}`),
    context(escapeAndTruncate(view.message, SLACK_LIMITS.contextText)),
    context(outcomeLine(view)),
  ];
  if (view.status === 'pending') {
    blocks.push(
      actions('budget', [
        button({ actionId: ACTION_IDS.budgetContinue, text: 'Continue', value, style: 'primary' }),
        button({ actionId: ACTION_IDS.budgetStop, text: 'Stop', value, style: 'danger' }),
      ]),
    );
  }
  return { text: `More budget? ${question}`, blocks };
}

/** The card of a stored ask; `deciders` as the policy names them now. */
export function budgetCardView(record: BudgetAskRecord, deciders: readonly string[]): BudgetCardView {
  return {
    runId: record.runId,
    round: record.round,
    reason: record.reason,
    message: record.message,
    offer: record.offer,
    status: record.status,
    deciders,
    expiresAt: record.expiresAt,
    decidedBy: record.decidedBy,
    decidedAt: record.decidedAt,
  };
}
