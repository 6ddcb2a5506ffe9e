/**
 * The final answer as thread messages: standard Markdown in a `markdown` block (at most 12,000 characters
 * per message, so longer answers become several messages), then, on the last one, the stop reason when the
 * run did not complete, Slack's feedback buttons (when there is an answer) and a Details button.
 */
import type { StopReason } from '../loop/run-status.js';
import type { FeedbackValue } from '../store/feedback/feedback-store.js';
import { actions, button, context, type KnownBlock, type SlackMessage, section } from './block-kit.js';
import { ACTION_IDS } from './ids.js';
import { SLACK_LIMITS } from './limits.js';
import { escapeKeepingUserMentions, truncate } from './mrkdwn.js';
import { neutraliseAnswer } from './neutralise.js';
import { splitMarkdown } from './split.js';
import { STOP_REASON_SENTENCE } from './stop-reason.js';

interface FinalAnswerView {
  runId: string;
  /** The accepted answer (RunState.answer); any part longer than a markdown block is split again. */
  parts: readonly string[];
  stopReason: StopReason | null;
  /** The run's own sentence about why it ended; preferred over the generic one. */
  stopMessage?: string | null;
}

/** Characters of an answer repeated in `text` (what notifications and screen readers show). */
const FALLBACK_CHARS = 3_000;

function stopLine(view: Pick<FinalAnswerView, 'stopReason' | 'stopMessage'>): string | null {
  if (view.stopReason === null || view.stopReason === 'completed') return null;
  const sentence = view.stopMessage?.trim() || STOP_REASON_SENTENCE[view.stopReason];
  return `:warning: ${escapeKeepingUserMentions(truncate(sentence, SLACK_LIMITS.contextText - 40))}`;
}

/** The value a feedback button carries: what was clicked, and on which run's answer. */
export const feedbackValue = (value: FeedbackValue, runId: string): string => `${value}:${runId}`;

/** Reads a feedback button's value; null when it is not one. */
export function parseFeedbackValue(text: string): { value: FeedbackValue; runId: string } | null {
  const m = /^(good|bad):(.+)$/.exec(text);
  return m ? { value: m[1] as FeedbackValue, runId: m[2] as string } : null;
}

/**
 * Slack's feedback buttons (👍 / 👎) for the answer of `runId`: a `context_actions` block. Any message
 * that ends an answer carries it (a streamed answer too, in the blocks its stream closes with).
 */
export function feedbackBlock(runId: string): KnownBlock {
  return {
    type: 'context_actions',
    block_id: `loopgate_feedback`,
    elements: [
      {
        type: 'feedback_buttons',
        action_id: ACTION_IDS.feedback,
        positive_button: {
          text: { type: 'plain_text', text: '👍' },
          accessibility_label: 'This answer helped',
          value: feedbackValue('good', runId),
        },
        negative_button: {
          text: { type: 'plain_text', text: '👎' },
          accessibility_label: 'This answer did not help',
          value: feedbackValue('bad', runId),
        },
      },
    ],
  };
}

/**
 * What ends the answer's last message: the stop reason when the run did not complete, the feedback
 * buttons and the Details button.
 * A streamed answer ends with the same blocks (src/slack/surfaces).
 */
export function answerFooter(
  view: Pick<FinalAnswerView, 'runId' | 'stopReason' | 'stopMessage'>,
): KnownBlock[] {
  const stop = stopLine(view);
  const tail: KnownBlock[] = [];
  if (stop) tail.push(context(stop));
  // Feedback is on an answer: between the stop reason and the Details button.
  tail.push(
    feedbackBlock(view.runId),
    actions('loopgate_answer', [
      button({ actionId: ACTION_IDS.details, text: 'Details', value: view.runId }),
    ]),
  );
  return tail;
}

/** One or more messages to post in order; never empty. */
export function finalAnswerMessages(view: FinalAnswerView): SlackMessage[] {
  const pieces = view.parts
    .map((part) => neutraliseAnswer(part).trim())
    .filter((part) => part !== '')
    .flatMap((part) => splitMarkdown(part, SLACK_LIMITS.markdownBlock));

  const messages: SlackMessage[] = pieces.map((piece) => ({
    text: truncate(piece, FALLBACK_CHARS),
    blocks: [{ type: 'markdown', text: piece }],
  }));

  const stop = stopLine(view);
  const tail = answerFooter(view);

  const last = messages.at(-1);
  if (last) {
    last.blocks.push(...tail);
    return messages;
  }
  const sentence = stop ?? ':warning: The run ended without an answer.';
  return [{ text: sentence, blocks: [section(sentence), ...tail.filter((b) => b.type === 'actions')] }];
}
