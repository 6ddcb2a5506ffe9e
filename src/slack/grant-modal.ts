/**
 * The modal "Approve and allow similar calls" opens: what a grant would cover (the tool, the values of the
 * arguments the rule names), for how long (up to the rule's maxMinutes) and where (this thread, or only
 * this run). Submitting approves the call and creates the grant (src/bot/grants.ts).
 */
import { z } from 'zod';
import { context, type ModalView, plainText, section } from './block-kit.js';
import { CALLBACK_IDS } from './ids.js';
import { SLACK_LIMITS } from './limits.js';
import { escapeAndTruncate } from './mrkdwn.js';

const GRANT_INPUTS = { minutes: 'minutes', scope: 'scope', action: 'value' } as const;
const STEPS = [5, 15, 30, 60, 120, 240, 480, 720, 1440];

const GrantMetadata = z.object({
  approvalId: z.string().min(1),
  channel: z.string().min(1),
  messageTs: z.string().min(1),
});
type GrantMetadata = z.infer<typeof GrantMetadata>;

const minutesText = (m: number) => (m % 60 === 0 ? `${m / 60} hour${m === 60 ? '' : 's'}` : `${m} minutes`);

export function grantModal(
  meta: GrantMetadata & { tool: string; covers: string; maxMinutes: number },
): ModalView {
  const choices = [...new Set([...STEPS.filter((m) => m < meta.maxMinutes), meta.maxMinutes])];
  const options = choices.map((m) => ({ text: plainText(minutesText(m), 75), value: String(m) }));
  const scopes = [
    { text: plainText('this thread', 75), value: 'thread' },
    { text: plainText('this run only', 75), value: 'run' },
  ];
  return {
    type: 'modal',
    callback_id: CALLBACK_IDS.grant,
    private_metadata: JSON.stringify(GrantMetadata.parse(meta)),
    title: plainText('Approve and allow', SLACK_LIMITS.modalTitle),
    submit: plainText('Approve', SLACK_LIMITS.modalTitle),
    close: plainText('Cancel', SLACK_LIMITS.modalTitle),
    blocks: [
      section(
        `Approve this \`${escapeAndTruncate(meta.tool, 200, '…')}\` call, and let later calls with the same ${escapeAndTruncate(meta.covers, 1_500)} run without asking, for a while. Each is audited as granted by you; you can revoke it in App Home or with \`/loopgate grants\`.`,
      ),
      {
        type: 'input',
        block_id: GRANT_INPUTS.minutes,
        label: plainText('For', SLACK_LIMITS.inputLabel),
        element: {
          type: 'static_select',
          action_id: GRANT_INPUTS.action,
          options,
          initial_option: options[options.length - 1] ?? options[0],
        },
      },
      {
        type: 'input',
        block_id: GRANT_INPUTS.scope,
        label: plainText('In', SLACK_LIMITS.inputLabel),
        element: {
          type: 'radio_buttons',
          action_id: GRANT_INPUTS.action,
          options: scopes,
          initial_option: scopes[0],
        },
      },
      context('Calls with other values, of other tools, or in other threads still ask.'),
    ],
  };
}

const Selected = z.looseObject({ selected_option: z.looseObject({ value: z.string() }).nullish() });
const GrantSubmission = z.looseObject({
  callback_id: z.literal(CALLBACK_IDS.grant),
  private_metadata: z.string(),
  state: z.looseObject({ values: z.record(z.string(), z.record(z.string(), Selected)) }),
});

export function parseGrantSubmission(
  view: unknown,
): GrantMetadata & { minutes: number; scope: 'thread' | 'run' } {
  const parsed = GrantSubmission.parse(view);
  const meta = GrantMetadata.parse(JSON.parse(parsed.private_metadata));
  const values = parsed.state.values;
  const minutes = Number(values[GRANT_INPUTS.minutes]?.[GRANT_INPUTS.action]?.selected_option?.value);
  const scope =
    values[GRANT_INPUTS.scope]?.[GRANT_INPUTS.action]?.selected_option?.value === 'run' ? 'run' : 'thread';
  return { ...meta, minutes: Number.isInteger(minutes) && minutes > 0 ? minutes : 0, scope };
}
