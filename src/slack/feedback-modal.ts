/**
 * The modal a feedback click opens (inside the click's handler: the trigger_id lives about 3 s): the
 * click is recorded already; the modal only asks for an optional comment. The run id is carried in
 * `private_metadata`, so the submission handler needs nothing else.
 */
import { z } from 'zod';
import type { FeedbackValue } from '../store/feedback/feedback-store.js';
import { MAX_FEEDBACK_COMMENT } from '../store/feedback/feedback-store.js';
import { context, type ModalView, plainText } from './block-kit.js';
import { CALLBACK_IDS, FEEDBACK_COMMENT_INPUT } from './ids.js';
import { SLACK_LIMITS } from './limits.js';

const FeedbackMetadata = z.object({ runId: z.string().min(1) });

export function feedbackCommentModal(runId: string, value: FeedbackValue): ModalView {
  const thanks =
    value === 'good'
      ? 'Thanks: your :thumbsup: is recorded. Anything to add?'
      : 'Thanks: your :thumbsdown: is recorded. What was wrong or missing?';
  return {
    type: 'modal',
    callback_id: CALLBACK_IDS.feedbackComment,
    private_metadata: JSON.stringify(FeedbackMetadata.parse({ runId })).slice(
      0,
      SLACK_LIMITS.privateMetadata,
    ),
    title: plainText('Feedback', SLACK_LIMITS.modalTitle),
    submit: plainText('Send', SLACK_LIMITS.modalTitle),
    close: plainText('Skip', SLACK_LIMITS.modalTitle),
    blocks: [
      context(thanks),
      {
        type: 'input',
        block_id: FEEDBACK_COMMENT_INPUT.blockId,
        optional: true,
        label: plainText('Comment (optional)', SLACK_LIMITS.inputLabel),
        element: {
          type: 'plain_text_input',
          action_id: FEEDBACK_COMMENT_INPUT.actionId,
          multiline: true,
          max_length: MAX_FEEDBACK_COMMENT,
        },
      },
    ],
  };
}

const FeedbackSubmission = z.object({
  callback_id: z.literal(CALLBACK_IDS.feedbackComment),
  private_metadata: z.string(),
  state: z.object({
    values: z.record(z.string(), z.record(z.string(), z.object({ value: z.string().nullish() }))),
  }),
});

/** Reads a submitted feedback modal: the run and the trimmed comment (undefined when left empty). */
export function parseFeedbackSubmission(view: unknown): { runId: string; comment: string | undefined } {
  const parsed = FeedbackSubmission.parse(view);
  const { runId } = FeedbackMetadata.parse(JSON.parse(parsed.private_metadata));
  const raw = parsed.state.values[FEEDBACK_COMMENT_INPUT.blockId]?.[FEEDBACK_COMMENT_INPUT.actionId]?.value;
  return { runId, comment: raw?.trim() ? raw.trim().slice(0, MAX_FEEDBACK_COMMENT) : undefined };
}
