/**
 * The gated case most approval tests start from: someone asks to deploy, the model calls `http_request`
 * (a write, so it waits for approval), and, once the call was decided, answers from its result.
 */
import { expect } from 'vitest';
import { ACTION_IDS } from '../../../src/slack/ids.js';
import type { WireMessage } from '../../fakes/openai-server.js';
import { callThenAnswer, succeeded } from './model-brains.js';
import { buttonsOf, type Card, wordsOf } from './slack-view.js';
import { type Asked, PEOPLE, type SlackWorld } from './slack-world.js';

export const DEPLOYED = 'The payments deploy went through.';
export const NOT_DEPLOYED = 'The payments deploy did not happen.';

export interface DeployCase {
  tag: string;
  channel: string;
  /** Where the write goes; the fixture counts its requests. */
  url: string;
  asked: Asked;
  card: Card;
}

/** Asks (as `requester`) for a deploy in a fresh channel and waits for the approval card. */
export async function askToDeploy(
  w: SlackWorld,
  tag: string,
  requester: string = PEOPLE.requester,
): Promise<DeployCase> {
  const channel = w.newChannel();
  const url = w.deployUrl(tag);
  w.model.brain(
    tag,
    callThenAnswer(
      'http_request',
      { method: 'POST', url, body: { service: 'payments', version: '1.4.3' } },
      (r) => (succeeded(r) ? DEPLOYED : NOT_DEPLOYED),
    ),
  );
  const asked = await w.ask(channel, requester, w.model.tagged(tag, 'please deploy payments 1.4.3'));
  const card = await w.card(asked);
  return { tag, channel, url, asked, card };
}

/**
 * The pending card as a person sees it: what would be sent, who asked, who may decide, its buttons (Edit
 * too: the worker keeps the tool's schema on the approval).
 */
export function expectPendingCard(w: SlackWorld, c: DeployCase, requester: string = PEOPLE.requester): void {
  const message = w.message(c.card);
  const words = wordsOf(message);
  expect(words).toContain('Approval needed');
  expect(words).toContain(c.url);
  expect(words).toContain(`Asked by <@${requester}>`);
  expect(words).toContain(`<@${PEOPLE.manager}>`);
  expect(words).toContain(PEOPLE.sreGroup);
  expect(buttonsOf(message.blocks).map((b) => [b.actionId, b.value])).toEqual([
    [ACTION_IDS.approve, c.card.approvalId],
    [ACTION_IDS.reject, c.card.approvalId],
    [ACTION_IDS.edit, c.card.approvalId],
    [ACTION_IDS.details, c.asked.runId],
  ]);
}

/** The decided card: the decision line, and no Approve or Reject button any more (Details stays). */
export function expectDecidedCard(w: SlackWorld, c: DeployCase, decision: RegExp): void {
  const message = w.message(c.card);
  expect(wordsOf(message)).toMatch(decision);
  expect(buttonsOf(message.blocks).map((b) => b.actionId)).toEqual([ACTION_IDS.details]);
}

/**
 * The card a click decided, once the bot has redrawn it. The bot redraws the card while it queues the
 * resume job, so the run can end and its answer be posted before the edit reaches Slack: this waits for
 * the edit, then checks it as `expectDecidedCard` does.
 */
export async function expectRedrawnCard(w: SlackWorld, c: DeployCase, decision: RegExp): Promise<void> {
  await w.waitFor('the bot to redraw the card', () => w.message(c.card).history.length > 0);
  expectDecidedCard(w, c, decision);
}

/** The contents of the tool results in the last request the model got for `tag`. */
export function toolResultsSeen(w: SlackWorld, tag: string): string[] {
  return (w.model.requestsOf(tag).at(-1)?.body.messages ?? [])
    .filter((m): m is Extract<WireMessage, { role: 'tool' }> => m.role === 'tool')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
}

/** The messages the bot posted in the case's thread whose words include `text`. */
export function postedWith(w: SlackWorld, c: DeployCase, text: string) {
  return w.slack.thread(c.channel, c.asked.threadTs).filter((m) => m.bot_id && wordsOf(m).includes(text));
}
