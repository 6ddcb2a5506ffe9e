/**
 * The Full text modal of an approval card: the complete arguments, preview, plan (and the approved plan
 * when it changed) and stated reason of one gated
 * call, never shortened, across as many section blocks as they need. The engine refuses arguments longer
 * than MAX_SHOWN_ARGUMENT_CHARS before asking anyone, which (at most 8 shown characters per character, for
 * `⟨U+202E⟩`) fits in the modal's 100 blocks with room for a tool's preview.
 */
import type { ApprovalView } from './approval-card.js';
import { argumentsInFull } from './arguments-text.js';
import { context, type KnownBlock, type ModalView, plainText, section } from './block-kit.js';
import { CALLBACK_IDS } from './ids.js';
import { SLACK_LIMITS } from './limits.js';
import { escapeAndTruncate, escapeMrkdwn, showInvisible } from './mrkdwn.js';

const FENCE = '```';
/** Room for a label line and the fences around one piece of preformatted text. */
const PIECE_CHARS = SLACK_LIMITS.sectionText - 60;

/** Where to cut escaped text at or before `at`: not inside an entity (`&amp;`) nor a surrogate pair. */
function cutPoint(text: string, at: number): number {
  let cut = at;
  const amp = text.lastIndexOf('&', cut - 1);
  if (amp >= 0 && amp > text.lastIndexOf(';', cut - 1)) cut = amp;
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
  return cut > 0 ? cut : at;
}

/** Splits escaped mrkdwn into pieces of at most `max` characters, at line ends when it can. */
export function pieces(text: string, max: number = PIECE_CHARS): string[] {
  const out: string[] = [];
  let rest = text;
  while (rest.length > max) {
    const newline = rest.lastIndexOf('\n', max);
    const cut = newline > max / 2 ? newline + 1 : cutPoint(rest, max);
    out.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  out.push(rest);
  return out;
}

function labelledPieces(label: string, text: string, preformatted: boolean): KnownBlock[] {
  const parts = pieces(text);
  return parts.map((part, i) => {
    const title = parts.length === 1 ? `*${label}*` : `*${label}* (${i + 1} of ${parts.length})`;
    const body = preformatted ? `${FENCE}\n${part.replace(/\n$/, '\n ')}\n${FENCE}` : part;
    return section(`${title}\n${body}`);
  });
}

/** The complete arguments, preview and reason of `view`'s call. */
export function fullTextModal(view: ApprovalView): ModalView {
  const blocks: KnownBlock[] = [
    section(
      `\`${escapeAndTruncate(view.tool, 200, '…')}\` exactly as it will run (arguments hash \`${escapeAndTruncate(view.argsHash.slice(0, 12), 20)}\`). Nothing here is shortened.`,
    ),
    ...labelledPieces(view.edited ? 'Arguments (as edited)' : 'Arguments', argumentsInFull(view.args), true),
  ];
  // What the edit changed is cut on the card: the model's original, whole, lets the approver compare.
  if (view.edited) {
    blocks.push(
      ...labelledPieces("The model's original arguments", argumentsInFull(view.edited.originalArgs), true),
    );
  }
  if (view.preview)
    blocks.push(...labelledPieces('Preview', escapeMrkdwn(showInvisible(view.preview)), false));
  if (view.plan?.ok)
    blocks.push(...labelledPieces('Plan', escapeMrkdwn(showInvisible(view.plan.text)), true));
  const approvedPlan = view.planChanged?.before;
  if (approvedPlan?.ok) {
    blocks.push(
      ...labelledPieces('The plan that was approved', escapeMrkdwn(showInvisible(approvedPlan.text)), true),
    );
  }
  if (view.reason) {
    blocks.push(...labelledPieces("Why (the model's words)", escapeMrkdwn(showInvisible(view.reason)), true));
  }
  if (blocks.length > SLACK_LIMITS.viewBlocks) {
    // Only an oversized preview or reason gets here (the engine bounds arguments); say what is missing.
    const left = blocks.length - (SLACK_LIMITS.viewBlocks - 1);
    blocks.splice(SLACK_LIMITS.viewBlocks - 1);
    blocks.push(context(`_${left} more sections do not fit in one Slack modal and are not shown._`));
  }
  return {
    type: 'modal',
    callback_id: CALLBACK_IDS.fullText,
    private_metadata: view.approvalId.slice(0, SLACK_LIMITS.privateMetadata),
    title: plainText('Full text', SLACK_LIMITS.modalTitle),
    close: plainText('Close', SLACK_LIMITS.modalTitle),
    blocks,
  };
}
