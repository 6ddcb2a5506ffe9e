/**
 * The modal that Reject opens (inside the click's handler: the trigger_id lives about 3 s). It asks for an
 * optional reason and carries the approval id and the card's location in `private_metadata`, so the
 * submission handler needs nothing else.
 */
import { z } from 'zod';
import { context, type ModalView, plainText } from './block-kit.js';
import { CALLBACK_IDS, REJECT_REASON_INPUT } from './ids.js';
import { SLACK_LIMITS } from './limits.js';
import { escapeAndTruncate } from './mrkdwn.js';

/** Longest reason a person may type. */
const MAX_REJECT_REASON = 2_000;

const RejectReasonMetadata = z.object({
  approvalId: z.string().min(1),
  channel: z.string().min(1),
  messageTs: z.string().min(1),
});
type RejectReasonMetadata = z.infer<typeof RejectReasonMetadata>;

export function rejectReasonModal(meta: RejectReasonMetadata & { tool?: string }): ModalView {
  const privateMetadata = JSON.stringify(RejectReasonMetadata.parse(meta));
  if (privateMetadata.length > SLACK_LIMITS.privateMetadata) {
    throw new RangeError('reject modal metadata exceeds the private_metadata limit');
  }
  const subject = meta.tool ? `\`${escapeAndTruncate(meta.tool, 200, '…')}\`` : 'this call';
  return {
    type: 'modal',
    callback_id: CALLBACK_IDS.rejectReason,
    private_metadata: privateMetadata,
    title: plainText('Reject', SLACK_LIMITS.modalTitle),
    submit: plainText('Reject', SLACK_LIMITS.modalTitle),
    close: plainText('Cancel', SLACK_LIMITS.modalTitle),
    blocks: [
      context(`You are rejecting ${subject}. The model reads your reason as the call's result.`),
      {
        type: 'input',
        block_id: REJECT_REASON_INPUT.blockId,
        optional: true,
        label: plainText('Reason (optional)', SLACK_LIMITS.inputLabel),
        element: {
          type: 'plain_text_input',
          action_id: REJECT_REASON_INPUT.actionId,
          multiline: true,
          max_length: MAX_REJECT_REASON,
          placeholder: plainText('Why not? What should happen instead?', 150),
        },
      },
    ],
  };
}

/** The part of a `view_submission` payload's `view` that the parser reads. */
const RejectReasonSubmission = z.object({
  callback_id: z.literal(CALLBACK_IDS.rejectReason),
  private_metadata: z.string(),
  state: z.object({
    values: z.record(z.string(), z.record(z.string(), z.object({ value: z.string().nullish() }))),
  }),
});

interface RejectReason extends RejectReasonMetadata {
  /** Trimmed reason, or undefined when the person left it empty. */
  reason: string | undefined;
}

/** Reads a submitted reject-reason modal; throws a ZodError on anything else. */
export function parseRejectReasonSubmission(view: unknown): RejectReason {
  const parsed = RejectReasonSubmission.parse(view);
  const meta = RejectReasonMetadata.parse(JSON.parse(parsed.private_metadata));
  const raw = parsed.state.values[REJECT_REASON_INPUT.blockId]?.[REJECT_REASON_INPUT.actionId]?.value;
  const reason = raw?.trim() ? raw.trim().slice(0, MAX_REJECT_REASON) : undefined;
  return { ...meta, reason };
}
