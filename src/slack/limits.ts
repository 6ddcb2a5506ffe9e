/**
 * Slack's documented Block Kit and message limits that loopgate's builders stay within. A payload past
 * one of them is refused by Slack (`invalid_blocks`), so builders truncate or split before sending.
 */
export const SLACK_LIMITS = {
  /** Blocks in a modal or App Home view. */
  viewBlocks: 100,
  /** Text of a section block. */
  sectionText: 3_000,
  /** Text of one context element (kept below the generic text object limit). */
  contextText: 2_000,
  /** plain_text of a header block. */
  headerText: 150,
  /** Label of a button. */
  buttonText: 75,
  /** `value` of a button, returned in the click's payload. */
  buttonValue: 2_000,
  /** Standard Markdown across all `markdown` blocks of one message. */
  markdownBlock: 12_000,
  /** Title, submit and close labels of a modal. */
  modalTitle: 24,
  /** `private_metadata` of a view. */
  privateMetadata: 3_000,
  /** Label of an input block. */
  inputLabel: 2_000,
} as const;
