import { describe, expect, it } from 'vitest';
import { messageLines } from '../../demo/lib/slack-text.js';
import { feedbackBlock } from '../../src/slack/final-answer.js';

describe("the terminal's drawing of Slack blocks", () => {
  it('draws the feedback buttons of an answer as buttons, not as an unknown block', () => {
    expect(messageLines({ text: '', blocks: [feedbackBlock('r-1')] }, (id) => id)).toEqual(['[ 👍 ] [ 👎 ]']);
  });
});
