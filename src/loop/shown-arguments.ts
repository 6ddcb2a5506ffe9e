/**
 * A gated call's arguments must fit what an approver can read in full (the approval card and its "Full
 * text" modal). Longer ones are refused before anyone is asked, as an argument error the model can fix,
 * instead of asking a person to approve what they cannot read. The limit is a plain number so the engine
 * knows nothing of Slack; test/slack/full-text-modal.test.ts proves the modal holds arguments of this size.
 */
import { errorResult } from './observation.js';
import type { ToolResult } from './tool-result.js';

/** Longest validated arguments (as JSON text) of a gated call that an approver can be shown in full. */
export const MAX_SHOWN_ARGUMENT_CHARS = 20_000;

/** An `invalid_arguments` result when `args` are too long to show an approver, else null. */
export function tooLongToShow(
  tool: string,
  args: unknown,
  max = MAX_SHOWN_ARGUMENT_CHARS,
): ToolResult | null {
  const length = JSON.stringify(args)?.length ?? 0;
  if (length <= max) return null;
  return errorResult(
    'invalid_arguments',
    `The arguments of ${tool} are too long to show an approver: ${length} chars, limit ${max}. Send shorter arguments, or split the work into several smaller calls.`,
  );
}
