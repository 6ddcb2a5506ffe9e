/**
 * The modal "Break glass" opens: a required reason and incident reference, with what breaking the glass
 * does (runs this one call, denied by `rule`, posted in the thread and audited for review). The approval
 * id and the card's place ride in `private_metadata`; the submission is checked again (src/bot/break-glass.ts).
 */
import { z } from 'zod';
import { MAX_BREAK_GLASS_REASON, MAX_INCIDENT_REF } from '../policy/break-glass.js';
import { type ModalView, plainText, section } from './block-kit.js';
import { CALLBACK_IDS } from './ids.js';
import { SLACK_LIMITS } from './limits.js';
import { escapeAndTruncate } from './mrkdwn.js';

/** block_id of each input (its action_id is `value`); also the keys of `response_action: errors`. */
const BREAK_GLASS_INPUTS = { reason: 'reason', incident: 'incident', action: 'value' } as const;

const BreakGlassMetadata = z.object({
  approvalId: z.string().min(1),
  channel: z.string().min(1),
  messageTs: z.string().min(1),
});
type BreakGlassMetadata = z.infer<typeof BreakGlassMetadata>;

export function breakGlassModal(meta: BreakGlassMetadata & { tool: string; rule: string }): ModalView {
  const privateMetadata = JSON.stringify(BreakGlassMetadata.parse(meta));
  if (privateMetadata.length > SLACK_LIMITS.privateMetadata) {
    throw new RangeError('break-glass modal metadata exceeds the private_metadata limit');
  }
  return {
    type: 'modal',
    callback_id: CALLBACK_IDS.breakGlass,
    private_metadata: privateMetadata,
    title: plainText('Break glass', SLACK_LIMITS.modalTitle),
    submit: plainText('Break glass', SLACK_LIMITS.modalTitle),
    close: plainText('Cancel', SLACK_LIMITS.modalTitle),
    blocks: [
      section(
        `:rotating_light: ${escapeAndTruncate(meta.rule, 300)} denies this \`${escapeAndTruncate(meta.tool, 200, '…')}\` call. Breaking glass runs *this one call* anyway, in your name. It is posted in the thread, audited and flagged for review.`,
      ),
      {
        type: 'input',
        block_id: BREAK_GLASS_INPUTS.reason,
        label: plainText('Reason', SLACK_LIMITS.inputLabel),
        element: {
          type: 'plain_text_input',
          action_id: BREAK_GLASS_INPUTS.action,
          multiline: true,
          max_length: MAX_BREAK_GLASS_REASON,
          placeholder: plainText('Why must this run now, despite the rule?', 150),
        },
      },
      {
        type: 'input',
        block_id: BREAK_GLASS_INPUTS.incident,
        label: plainText('Incident reference', SLACK_LIMITS.inputLabel),
        element: {
          type: 'plain_text_input',
          action_id: BREAK_GLASS_INPUTS.action,
          max_length: MAX_INCIDENT_REF,
          placeholder: plainText('INC-1234', 150),
        },
      },
    ],
  };
}

const Typed = z.looseObject({ value: z.string().nullish() });
const BreakGlassSubmission = z.looseObject({
  callback_id: z.literal(CALLBACK_IDS.breakGlass),
  private_metadata: z.string(),
  state: z.looseObject({ values: z.record(z.string(), z.record(z.string(), Typed)) }),
});

/** Reads a submitted break-glass modal (values as typed, untrimmed); throws a ZodError on anything else. */
export function parseBreakGlassSubmission(
  view: unknown,
): BreakGlassMetadata & { reason: string | null; incident: string | null } {
  const parsed = BreakGlassSubmission.parse(view);
  const meta = BreakGlassMetadata.parse(JSON.parse(parsed.private_metadata));
  const value = (block: string) => parsed.state.values[block]?.[BREAK_GLASS_INPUTS.action]?.value ?? null;
  return {
    ...meta,
    reason: value(BREAK_GLASS_INPUTS.reason),
    incident: value(BREAK_GLASS_INPUTS.incident),
  };
}
