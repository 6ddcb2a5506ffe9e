/**
 * Block Kit types (re-exported from Bolt's copy of @slack/types) and tiny element builders, so the
 * builders read as layouts rather than JSON.
 */
import type { types } from '@slack/bolt';
import { SLACK_LIMITS } from './limits.js';
import { truncate } from './mrkdwn.js';

export type KnownBlock = types.KnownBlock;
type SectionBlock = types.SectionBlock;
export type ContextBlock = types.ContextBlock;
export type ActionsBlock = types.ActionsBlock;
type HeaderBlock = types.HeaderBlock;
export type Button = types.Button;
export type ModalView = types.ModalView;
type PlainTextElement = types.PlainTextElement;

/** A message as loopgate posts it: blocks plus the `text` Slack shows in notifications. */
export interface SlackMessage {
  text: string;
  blocks: KnownBlock[];
}

export function plainText(text: string, max: number): PlainTextElement {
  return { type: 'plain_text', text: truncate(text, max, '…'), emoji: true };
}

/** A section whose mrkdwn `text` the caller has already escaped and sized (checked here, not fixed). */
export function section(mrkdwn: string): SectionBlock {
  if (mrkdwn.length > SLACK_LIMITS.sectionText) {
    throw new RangeError(`section text of ${mrkdwn.length} chars exceeds ${SLACK_LIMITS.sectionText}`);
  }
  return { type: 'section', text: { type: 'mrkdwn', text: mrkdwn } };
}

/** A context line of already escaped mrkdwn, truncated to the element limit. */
export function context(mrkdwn: string): ContextBlock {
  return {
    type: 'context',
    elements: [{ type: 'mrkdwn', text: truncate(mrkdwn, SLACK_LIMITS.contextText, '…') }],
  };
}

export function header(text: string): HeaderBlock {
  return { type: 'header', text: plainText(text, SLACK_LIMITS.headerText) };
}

export function button(opts: {
  actionId: string;
  text: string;
  value: string;
  style?: 'primary' | 'danger';
  /** Slack asks "are you sure?" with this before sending the click. */
  confirm?: { title: string; text: string; confirm: string; deny: string };
}): Button {
  if (opts.value.length > SLACK_LIMITS.buttonValue) {
    throw new RangeError(`button value of ${opts.value.length} chars exceeds ${SLACK_LIMITS.buttonValue}`);
  }
  return {
    type: 'button',
    action_id: opts.actionId,
    text: plainText(opts.text, SLACK_LIMITS.buttonText),
    value: opts.value,
    ...(opts.style ? { style: opts.style } : {}),
    ...(opts.confirm
      ? {
          confirm: {
            title: plainText(opts.confirm.title, 100),
            text: plainText(opts.confirm.text, 300),
            confirm: plainText(opts.confirm.confirm, 30),
            deny: plainText(opts.confirm.deny, 30),
          },
        }
      : {}),
  };
}

export function actions(blockId: string, elements: Button[]): ActionsBlock {
  return { type: 'actions', block_id: blockId, elements };
}
