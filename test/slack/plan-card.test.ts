/** The plan on the approval card: summarised, whole under Full text, the difference when it changed. */
import { describe, expect, it } from 'vitest';
import type { CallPlan } from '../../src/loop/gated-calls.js';
import { MAX_PLAN_CHARS, planHash } from '../../src/loop/plan.js';
import { type ApprovalView, approvalCard } from '../../src/slack/approval-card.js';
import { fullTextModal } from '../../src/slack/full-text-modal.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { planDiff } from '../../src/slack/plan-diff.js';
import { expectValidMessageBlocks, expectValidViewBlocks, shownText, texts } from './block-checks.js';

const planOf = (text: string): CallPlan => ({ ok: true, text, hash: planHash(text) });

function view(overrides: Partial<ApprovalView> = {}): ApprovalView {
  return {
    approvalId: 'apr_01HX:2',
    runId: 'run_01HX',
    tool: 'run_action',
    effect: 'write',
    args: { action: 'scale', params: { to: 5 } },
    argsHash: 'a'.repeat(64),
    requesterId: 'U0REQ',
    approvers: { users: ['U0MGR'], groups: [] },
    expiresAt: Date.UTC(2026, 5, 1, 12),
    status: 'pending',
    ...overrides,
  };
}

const text = (v: ApprovalView) => texts(approvalCard(v).blocks).join('\n');
const hasFullText = (v: ApprovalView) =>
  JSON.stringify(approvalCard(v).blocks).includes(`"action_id":"${ACTION_IDS.fullText}"`);

describe('the plan on the approval card', () => {
  it('shows a short plan whole, with no Full text needed', () => {
    const v = view({ plan: planOf('deployment/web: 3 -> 5 replicas') });
    expect(text(v)).toContain('deployment/web: 3 -&gt; 5 replicas');
    expect(hasFullText(v)).toBe(false);
    expectValidMessageBlocks(approvalCard(v).blocks);
  });

  it('summarises a long plan on the card and keeps every line of it under Full text', () => {
    const lines = Array.from({ length: 400 }, (_, i) => `~ resource "pod" "web-${i}" { replicas = ${i} }`);
    const v = view({ plan: planOf(lines.join('\n')) });
    const card = approvalCard(v);
    expectValidMessageBlocks(card.blocks);
    expect(hasFullText(v)).toBe(true);
    expect(texts(card.blocks).join('\n')).not.toContain('web-399');
    const modal = fullTextModal(v);
    expectValidViewBlocks(modal.blocks);
    expect(shownText(modal.blocks)).toContain('"web-399" { replicas = 399 }');
  });

  it('says why a plan failed, and that nothing runs on it', () => {
    const t = text(view({ plan: { ok: false, error: 'kubectl diff: connection refused' } }));
    expect(t).toContain('could not be computed (kubectl diff: connection refused)');
    expect(t).toContain('approving asks again with a fresh plan first');
  });

  it('asks again with the difference when the plan changed since approval; both plans under Full text', () => {
    const before = planOf('web: 3 pods\nimage: web:2.0');
    const after = planOf('web: 5 pods\nimage: web:2.0');
    const v = view({ plan: after, planChanged: { before } });
    const t = text(v);
    expect(t).toContain('The plan changed');
    expect(t).toContain('did *not* run');
    expect(t).toContain('- web: 3 pods\n+ web: 5 pods');
    expect(approvalCard(v).blocks.some((b) => JSON.stringify(b).includes(ACTION_IDS.approve))).toBe(true);
    const blocks = fullTextModal(v).blocks;
    expect(texts(blocks).join('\n')).toContain('*The plan that was approved*');
    const modal = shownText(blocks);
    expect(modal).toContain('web: 3 pods');
    expect(modal).toContain('web: 5 pods');
  });

  it('a plan at the size limit still fits the Full text modal', () => {
    const v = view({
      plan: planOf('p'.repeat(MAX_PLAN_CHARS)),
      planChanged: { before: planOf('q'.repeat(MAX_PLAN_CHARS)) },
    });
    const modal = fullTextModal(v);
    expectValidViewBlocks(modal.blocks);
    expect(shownText(modal.blocks)).not.toContain('do not fit in one Slack modal');
  });
});

describe('planDiff', () => {
  it('lists removed then added lines, counting repeated lines, and says how many more', () => {
    expect(planDiff('a\nb\nb\nc', 'a\nb\nc\nd')).toEqual({ lines: ['- b', '+ d'], more: 0 });
    const many = planDiff('', Array.from({ length: 20 }, (_, i) => `l${i}`).join('\n'), 5);
    expect(many.lines).toHaveLength(5);
    expect(many.more).toBe(16);
  });
});
