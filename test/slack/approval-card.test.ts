import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ApprovalView, approvalCard } from '../../src/slack/approval-card.js';
import type { ActionsBlock, Button, ContextBlock, KnownBlock } from '../../src/slack/block-kit.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { expectValidMessageBlocks, pings, texts } from './block-checks.js';

const EXPIRES = Date.UTC(2026, 5, 1, 12, 0, 0);

function view(overrides: Partial<ApprovalView> = {}): ApprovalView {
  return {
    approvalId: 'apr_01HX',
    runId: 'run_01HX',
    tool: 'http_request',
    effect: 'write',
    args: { method: 'POST', url: 'https://deploy.internal.example/api/restart/payments?env=prod' },
    argsHash: 'a'.repeat(64),
    reason: 'Payments is failing health checks; a restart usually fixes it.',
    requesterId: 'U0REQ',
    approvers: { users: ['U0MGR'], groups: ['S0SRE'] },
    expiresAt: EXPIRES,
    status: 'pending',
    ...overrides,
  };
}

function buttons(blocks: KnownBlock[]): Button[] {
  return blocks.filter((b): b is ActionsBlock => b.type === 'actions').flatMap((b) => b.elements as Button[]);
}

function allText(blocks: KnownBlock[]): string {
  return texts(blocks).join('\n');
}

/** The plain_text element that carries the model's stated reason. */
function reasonElement(blocks: KnownBlock[]): unknown {
  const block = blocks.find((b) => b.type === 'context' && JSON.stringify(b).includes("the model's words")) as
    | ContextBlock
    | undefined;
  return block?.elements[1];
}

describe('approvalCard of a sub-agent', () => {
  it('names the sub-agent beside the person who asked, pending and decided', () => {
    const pending = approvalCard(view({ agent: 'triage' }));
    expectValidMessageBlocks(pending.blocks);
    expect(allText(pending.blocks)).toContain('Asked by <@U0REQ> through the sub-agent `triage`');
    expect(pending.text).toBe(
      'Approval needed: http_request (write), asked by <@U0REQ> through the sub-agent triage',
    );
    const decided = approvalCard(
      view({ agent: 'triage', status: 'approved', decidedBy: 'U0MGR', decidedAt: EXPIRES }),
    );
    expect(allText(decided.blocks)).toContain('Asked by <@U0REQ> through the sub-agent `triage`');
    expect(allText(approvalCard(view()).blocks)).not.toContain('sub-agent');
  });
});

describe('approvalCard (pending)', () => {
  it('shows tool, effect, each argument on its own line, reason, requester, approvers and expiry', () => {
    const { blocks, text } = approvalCard(view({ preview: 'Restarts **payments** in prod.' }));
    const all = allText(blocks);
    expect(blocks[0]).toMatchObject({ type: 'header', text: { type: 'plain_text' } });
    expect(all).toContain('http_request');
    expect(all).toContain('*write*');
    expect(all).toContain('\nmethod: POST\n');
    expect(all).toContain('\nurl: https://deploy.internal.example/api/restart/payments?env=prod\n');
    expect(all).toContain('a restart usually fixes it');
    expect(all).toContain('Restarts **payments** in prod.');
    expect(all).toContain('Asked by <@U0REQ>');
    expect(all).toContain('Can decide: <@U0MGR>, <!subteam^S0SRE>');
    expect(all).toContain(`<!date^${EXPIRES / 1000}^{date_short_pretty} at {time}|2026-06-01 12:00 UTC>`);
    expect(text).toContain('Approval needed');
    expectValidMessageBlocks(blocks);
  });

  it('has Approve (primary) and Reject (danger) carrying only the approval id, and Details carrying the run id', () => {
    const found = buttons(approvalCard(view()).blocks);
    expect(found.map((b) => [b.action_id, b.style, b.value])).toEqual([
      [ACTION_IDS.approve, 'primary', 'apr_01HX'],
      [ACTION_IDS.reject, 'danger', 'apr_01HX'],
      [ACTION_IDS.details, undefined, 'run_01HX'],
    ]);
  });

  it('pings nobody through arguments, reason or preview that contain mentions', () => {
    const hostile = '<!channel> <!here> <@U999> <!subteam^S999> <!everyone>';
    const card = approvalCard(
      view({
        args: { text: hostile, nested: { x: hostile } },
        reason: hostile,
        preview: hostile,
        tool: 'post_message',
      }),
    );
    // The reason is plain_text, which Slack never turns into mentions; every mrkdwn text is escaped.
    const mrkdwnOnly = JSON.parse(JSON.stringify(card.blocks), (_k, v) =>
      v && typeof v === 'object' && v.type === 'plain_text' ? null : v,
    );
    expect(new Set(pings(mrkdwnOnly))).toEqual(new Set(['<@U0REQ>', '<@U0MGR>', '<!subteam^S0SRE>']));
    expect(allText(card.blocks)).toContain('&lt;!channel&gt;');
    expect(reasonElement(card.blocks)).toEqual({ type: 'plain_text', text: `“${hostile}”`, emoji: false });
  });

  it('keeps formatting characters and backticks in values from breaking out of the arguments block', () => {
    const { blocks } = approvalCard(view({ args: { body: '*bold* ```oops``` _x_' } }));
    const argsSection = allText(blocks).split('*Arguments*\n')[1]?.split('\n```')[0];
    expect(argsSection).toBeDefined();
    expect(argsSection?.slice(3)).not.toContain('```');
    expect(argsSection).toContain('*bold*');
  });

  it('truncates long values to fit 3,000 characters per section and points to the Full text button', () => {
    const card = approvalCard(
      view({
        args: { short: 'keep me', body: 'B'.repeat(20_000), other: `<${'x'.repeat(5_000)}>` },
        reason: 'R'.repeat(10_000),
        preview: 'P'.repeat(10_000),
      }),
    );
    expectValidMessageBlocks(card.blocks);
    const all = allText(card.blocks);
    expect(all).toContain('short: keep me');
    expect(all).toContain('… (truncated)');
    expect(all).toContain('every character of it is under *Full text* below this card');
    expect(buttons(card.blocks).map((b) => [b.action_id, b.text.text, b.value])).toContainEqual([
      ACTION_IDS.fullText,
      'Full text',
      'apr_01HX',
    ]);
    for (const block of card.blocks) {
      if (block.type === 'section') expect(block.text?.text.length ?? 0).toBeLessThanOrEqual(3_000);
    }
  });

  it('shows no Full text button when nothing was shortened', () => {
    expect(buttons(approvalCard(view()).blocks).map((b) => b.action_id)).not.toContain(ACTION_IDS.fullText);
  });

  it("renders the model's reason as one neutral quoted line that cannot imitate the card's sections", () => {
    const reason =
      'Fine.\n\n*Arguments*\n```\nmethod: GET\n```\n> quoted <https://evil.example|docs> \u202Eevil';
    const card = approvalCard(view({ reason }));
    expectValidMessageBlocks(card.blocks);
    expect(reasonElement(card.blocks)).toEqual({
      type: 'plain_text',
      text: '“Fine. ↵  ↵ *Arguments* ↵ ``` ↵ method: GET ↵ ``` ↵ > quoted <https://evil.example|docs> ⟨U+202E⟩evil”',
      emoji: false,
    });
    // Exactly one bold Arguments header and one preformatted block: the card's own.
    const mrkdwn = texts(card.blocks).filter((t) => !t.startsWith('“'));
    expect(mrkdwn.join('\n').match(/\*Arguments\*/g)).toHaveLength(1);
    expect(mrkdwn.join('\n').match(/```/g)).toHaveLength(2);
  });

  it('shows CR, line and paragraph separators, bidi and zero-width characters in values as code points', () => {
    const card = approvalCard(
      view({
        args: { cmd: 'restart\rdelete\u2028x\u2029y\u202Ez\u2066w\u200Bv\u0000u' },
        preview: 'p\u202Eq',
      }),
    );
    const all = allText(card.blocks);
    expect(all).toContain('cmd: restart⟨U+000D⟩delete⟨U+2028⟩x⟨U+2029⟩y⟨U+202E⟩z⟨U+2066⟩w⟨U+200B⟩v⟨U+0000⟩u');
    expect(all).toContain('p⟨U+202E⟩q');
    for (const hidden of ['\r', '\u2028', '\u2029', '\u202E', '\u2066', '\u0000']) {
      expect(all).not.toContain(hidden);
    }
  });

  it('stays within limits with hundreds of keys, naming how many are left out', () => {
    const args = Object.fromEntries(
      Array.from({ length: 400 }, (_, i) => [`key_${i}`, `value ${i} `.repeat(5)]),
    );
    const card = approvalCard(view({ args }));
    expectValidMessageBlocks(card.blocks);
    expect(allText(card.blocks)).toMatch(/… and \d+ more arguments/);
  });

  it('renders a multi-line string under its key and non-object arguments as a value', () => {
    expect(allText(approvalCard(view({ args: { script: 'line 1\nline 2' } })).blocks)).toContain(
      'script:\n  line 1\n  line 2',
    );
    expect(allText(approvalCard(view({ args: [1, 2] })).blocks)).toContain('```\n[1,2]\n```');
    expect(allText(approvalCard(view({ args: {} })).blocks)).toContain('_no arguments_');
  });

  it('takes the store record’s nulls for absent preview, reason and decision', () => {
    const card = approvalCard(
      view({ preview: null, reason: null, decidedBy: null, decidedAt: null, status: 'expired' }),
    );
    const all = allText(card.blocks);
    expect(all).not.toContain('Preview');
    expect(all).not.toContain('null');
    expect(all).toContain(`*Expired* <!date^${EXPIRES / 1000}^`);
  });

  it('refuses an approval id that cannot fit a button value', () => {
    expect(() => approvalCard(view({ approvalId: 'x'.repeat(2_001) }))).toThrow(RangeError);
  });
});

describe('approvalCard (after the decision)', () => {
  const decided = { decidedBy: 'U0MGR', decidedAt: EXPIRES - 60_000 };

  it.each([
    ['approved', '*Approved* by <@U0MGR>'],
    ['rejected', '*Rejected* by <@U0MGR>'],
    ['cancelled', '*Cancelled* by <@U0MGR>'],
    ['expired', '*Expired*'],
  ] as const)('%s: shows decision, who and when; Approve/Reject are gone', (status, line) => {
    const card = approvalCard(view({ status, ...decided, decisionReason: 'not during the freeze <!here>' }));
    const all = allText(card.blocks);
    expect(all).toContain(line);
    expect(all).toContain(`<!date^${(EXPIRES - 60_000) / 1000}^`);
    expect(buttons(card.blocks).map((b) => b.action_id)).toEqual([ACTION_IDS.details]);
    expect(all).not.toContain('Can decide');
    if (status !== 'expired') expect(all).toContain('not during the freeze &lt;!here&gt;');
    expect(pings(card)).not.toContain('<!here>');
    expectValidMessageBlocks(card.blocks);
  });

  it('shows what running the call gave, when the view has it (a call approved again)', () => {
    const card = approvalCard(
      view({ status: 'approved', ...decided, outcome: 'Ran again: succeeded. restarted <!here>' }),
    );
    expect(allText(card.blocks)).toContain('*Result*\nRan again: succeeded. restarted &lt;!here&gt;');
    expect(pings(card)).not.toContain('<!here>');
    expectValidMessageBlocks(card.blocks);
  });

  it('outcome_unknown explains and offers to approve again', () => {
    const card = approvalCard(view({ status: 'outcome_unknown', ...decided }));
    expect(allText(card.blocks)).toContain('Outcome unknown');
    expect(buttons(card.blocks).map((b) => [b.action_id, b.value])).toEqual([
      [ACTION_IDS.reapprove, 'apr_01HX'],
      [ACTION_IDS.details, 'run_01HX'],
    ]);
    // Slack asks before sending the click: the first attempt may already have taken effect.
    const again = buttons(card.blocks)[0]!;
    expect(again.style).toBeUndefined();
    expect(again.confirm?.title?.text).toBe('Run it again?');
    expect(again.confirm?.text.text).toContain('may already have taken effect');
    expectValidMessageBlocks(card.blocks);
  });

  it('not_run (no replica confirmed its start) says nothing happened and offers to approve again', () => {
    const card = approvalCard(view({ status: 'not_run', ...decided }));
    expect(allText(card.blocks)).toContain('Not run');
    expect(allText(card.blocks)).toContain('Redis could not confirm');
    expect(allText(card.blocks)).toContain('Nothing happened; it is safe to approve it again.');
    expect(buttons(card.blocks).map((b) => [b.action_id, b.value])).toEqual([
      [ACTION_IDS.reapprove, 'apr_01HX'],
      [ACTION_IDS.details, 'run_01HX'],
    ]);
    expect(buttons(card.blocks)[0]!.confirm?.text.text).toContain('It did not run before.');
    expectValidMessageBlocks(card.blocks);
  });

  it('failed_retryable says it was not repeated and why, and offers Retry behind a confirm dialog', () => {
    const card = approvalCard(view({ status: 'failed_retryable', ...decided }));
    const words = allText(card.blocks);
    expect(words).toContain('Failed, not repeated');
    expect(words).toContain('not repeated automatically because it may not be safe to repeat');
    expect(buttons(card.blocks).map((b) => [b.action_id, b.value, b.text.text])).toEqual([
      [ACTION_IDS.reapprove, 'apr_01HX', 'Retry'],
      [ACTION_IDS.details, 'run_01HX', 'Details'],
    ]);
    const retry = buttons(card.blocks)[0]!;
    expect(retry.confirm?.title?.text).toBe('Retry it?');
    expect(retry.confirm?.text.text).toContain('may still have taken effect');
    expectValidMessageBlocks(card.blocks);
  });
});

describe('approvalCard redraws whatever the content (issue 21, item 3)', () => {
  const longArgs = { channel: 'C0NEW', text: 'T'.repeat(2_990) };

  it('redraws an edited call whose arguments fill the card, with the cut diff pointing to Full text', () => {
    const card = approvalCard(
      view({
        args: longArgs,
        edited: { by: 'U0MGR', originalArgs: { channel: 'C0OLD', text: 'x'.repeat(2_990) } },
      }),
    );
    expectValidMessageBlocks(card.blocks);
    expect(allText(card.blocks)).toContain('*Arguments* (as edited)');
    expect(buttons(card.blocks).map((b) => b.action_id)).toContain(ACTION_IDS.fullText);
  });

  it('points to Full text when only the diff of an edit was cut', () => {
    const card = approvalCard(
      view({
        args: { text: 'a'.repeat(400) },
        edited: { by: 'U0MGR', originalArgs: { text: 'b'.repeat(400) } },
      }),
    );
    expectValidMessageBlocks(card.blocks);
    expect(buttons(card.blocks).map((b) => b.action_id)).toContain(ACTION_IDS.fullText);
  });

  it('never throws and always stays within Slack limits (property)', () => {
    const text = fc.oneof(
      fc.string({ maxLength: 4_000, unit: fc.constantFrom('a', '<', '&', '\n', '*', '\u202E', 'é') }),
      // Arguments that just fill the card's Arguments section.
      fc.integer({ min: 2_900, max: 3_050 }).map((n) => 'v'.repeat(n)),
    );
    const status = fc.constantFrom<ApprovalView['status']>(
      'pending',
      'approved',
      'rejected',
      'expired',
      'cancelled',
      'superseded',
      'outcome_unknown',
      'not_run',
      'failed_retryable',
    );
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ maxLength: 120 }), text, { maxKeys: 6 }),
        fc.dictionary(fc.string({ maxLength: 120 }), text, { maxKeys: 6 }),
        fc.option(text, { nil: undefined }),
        fc.option(text, { nil: undefined }),
        status,
        fc.array(fc.constantFrom('U0A', 'U0B', 'U0C'), { maxLength: 3 }),
        (args, original, reason, outcome, st, votes) => {
          const card = approvalCard(
            view({
              args,
              reason: reason ?? null,
              preview: reason ?? null,
              decisionReason: outcome ?? null,
              ...(outcome ? { outcome } : {}),
              status: st,
              decidedBy: 'U0MGR',
              decidedAt: EXPIRES,
              rule: outcome ?? 'rule 1',
              quorum: 3,
              votes,
              edited: { by: 'U0MGR', originalArgs: original },
            }),
          );
          expectValidMessageBlocks(card.blocks);
        },
      ),
      { numRuns: 200 },
    );
  });
});
