import { describe, expect, it } from 'vitest';
import { MAX_SHOWN_ARGUMENT_CHARS } from '../../src/loop/shown-arguments.js';
import { type ApprovalView, approvalCard } from '../../src/slack/approval-card.js';
import { fullTextModal, pieces } from '../../src/slack/full-text-modal.js';
import { SLACK_LIMITS } from '../../src/slack/limits.js';
import { expectValidViewBlocks, shownText } from './block-checks.js';

function view(overrides: Partial<ApprovalView> = {}): ApprovalView {
  return {
    approvalId: 'apr_01HX',
    runId: 'run_01HX',
    tool: 'post_message',
    effect: 'notify',
    args: { channel: 'C0OPS', text: 'hello' },
    argsHash: 'b'.repeat(64),
    requesterId: 'U0REQ',
    approvers: { users: ['U0MGR'], groups: [] },
    expiresAt: Date.UTC(2026, 5, 1),
    status: 'pending',
    ...overrides,
  };
}

describe('fullTextModal', () => {
  it('shows a harmful tail after 3,000+ characters of padding that the card cuts off', () => {
    const text = `${'All good, nothing to see. '.repeat(400)}<!channel> also run: rm -rf / & restart db`;
    const card = approvalCard(view({ args: { channel: 'C0OPS', text } }));
    expect(JSON.stringify(card.blocks)).not.toContain('rm -rf');

    const modal = fullTextModal(view({ args: { channel: 'C0OPS', text }, preview: `Posts:\n${text}` }));
    expectValidViewBlocks(modal.blocks);
    const shown = shownText(modal.blocks);
    expect(shown).toContain(
      `text: ${text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')}`,
    );
    expect(shown.match(/rm -rf \/ &amp; restart db/g)).toHaveLength(2); // arguments and preview
    expect(shown).not.toContain('<!channel>');
  });

  it("shows an edited call's arguments and the model's original whole, where the card's diff is cut", () => {
    const original = { channel: 'C0OPS', text: `${'o'.repeat(500)} ORIGINAL-TAIL` };
    const args = { channel: 'C0NEW', text: `${'e'.repeat(500)} EDITED-TAIL` };
    const modal = fullTextModal(view({ args, edited: { by: 'U0MGR', originalArgs: original } }));
    expectValidViewBlocks(modal.blocks);
    const all = JSON.stringify(modal.blocks);
    expect(all).toContain('*Arguments (as edited)*');
    expect(all).toContain("*The model's original arguments*");
    expect(all).toContain('EDITED-TAIL');
    expect(all).toContain('ORIGINAL-TAIL');
  });

  it('holds the longest arguments the engine lets through, even when every character expands', () => {
    for (const char of ['\u202E', '&', '\r', 'x']) {
      const inJson = JSON.stringify(char).length - 2; // `\r` takes two
      const filler = char.repeat(Math.floor((MAX_SHOWN_ARGUMENT_CHARS - 20) / inJson));
      const args = { text: filler };
      expect(JSON.stringify(args).length).toBeLessThanOrEqual(MAX_SHOWN_ARGUMENT_CHARS);
      const modal = fullTextModal(view({ args, preview: 'P'.repeat(2_500), reason: 'because' }));
      expectValidViewBlocks(modal.blocks);
      expect(modal.blocks.length).toBeLessThanOrEqual(SLACK_LIMITS.viewBlocks);
      const shown = shownText(modal.blocks);
      expect(shown).not.toContain('do not fit');
      expect(shown).toContain('P'.repeat(2_500));
      const visible = { '\u202E': '⟨U+202E⟩', '&': '&amp;', '\r': '⟨U+000D⟩', x: 'x' }[char] ?? '';
      expect(shown).toContain(`text: ${visible.repeat(filler.length)}`);
    }
  });

  it('cuts pieces at line ends, else never inside an entity or a surrogate pair', () => {
    const escaped = `${'a'.repeat(99)}&amp;${'😀'.repeat(100)}`;
    const parts = pieces(escaped, 102);
    expect(parts.join('')).toBe(escaped);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(102);
      expect(part).not.toMatch(/[\uD800-\uDBFF]$|^[\uDC00-\uDFFF]/);
      expect(part).not.toMatch(/&(?!amp;)|&a?m?p?$/);
    }
    expect(pieces('line one\nline two', 12)).toEqual(['line one\n', 'line two']);
  });
});
