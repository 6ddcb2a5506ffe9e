/**
 * Slack's documented Block Kit and message limits that loopgate's builders stay within. A payload past
 * one of them is refused by Slack (`invalid_blocks`), so builders truncate or split before sending.
 */
export const SLACK_LIMITS = {
  /** Blocks in one message. */
  messageBlocks: 50,
  /** Blocks in a modal or App Home view. */
  viewBlocks: 100,
  /** Text of a section block. */
  sectionText: 3_000,
  /** Text of one context element (kept below the generic text object limit). */
  contextText: 2_000,
  /** Elements in one context block. */
  contextElements: 10,
  /** plain_text of a header block. */
  headerText: 150,
  /** Label of a button. */
  buttonText: 75,
  /** `value` of a button, returned in the click's payload. */
  buttonValue: 2_000,
  /** `action_id` and `block_id`. */
  id: 255,
  /** Standard Markdown across all `markdown` blocks of one message. */
  markdownBlock: 12_000,
  /** A message's top-level `text`; Slack truncates it past this. */
  messageText: 40_000,
  /** Title, submit and close labels of a modal. */
  modalTitle: 24,
  /** `private_metadata` of a view. */
  privateMetadata: 3_000,
  /** Label of an input block. */
  inputLabel: 2_000,
  /** `max_length` of a plain_text_input. */
  plainTextInput: 3_000,
} as const;
