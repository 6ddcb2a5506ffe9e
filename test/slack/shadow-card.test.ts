/** The shadow card: unmistakably marked as not running, its own buttons, then who would have decided. */
import { describe, expect, it } from 'vitest';
import { type ApprovalView, approvalCard, SHADOW_HEADER } from '../../src/slack/approval-card.js';
import type { ActionsBlock, Button } from '../../src/slack/block-kit.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { expectValidMessageBlocks, texts } from './block-checks.js';

const ASKED = Date.UTC(2026, 5, 1, 12, 0, 0);

const view = (decided?: NonNullable<ApprovalView['shadow']>['decided']): ApprovalView => ({
  approvalId: 'apr_01HX',
  runId: 'run_01HX',
  tool: 'run_action',
  effect: 'write',
  args: { action: 'restart_service' },
  argsHash: 'a'.repeat(64),
  requesterId: 'U0REQ',
  approvers: { users: ['U0MGR'], groups: [] },
  expiresAt: ASKED + 3_600_000,
  status: 'rejected',
  decidedBy: null,
  decidedAt: ASKED,
  decisionReason: 'shadow mode (approvals.mode is shadow): not executed',
  shadow: { why: 'approvals.mode is shadow', askedAt: ASKED, ...(decided ? { decided } : {}) },
});

const buttonIds = (card: ReturnType<typeof approvalCard>) =>
  card.blocks
    .filter((b): b is ActionsBlock => b.type === 'actions')
    .flatMap((b) => (b.elements as Button[]).map((e) => e.action_id));

describe('shadow card', () => {
  it('says it will not run, why, and offers Would approve / Would reject (no Approve, no Reject)', () => {
    const card = approvalCard(view());
    expectValidMessageBlocks(card.blocks);
    const text = texts(card.blocks).join('\n');
    expect(text).toContain(`${SHADOW_HEADER}: run_action`);
    expect(text).toContain('*not executed* and will not run');
    expect(text).toContain('approvals.mode is shadow');
    expect(text).not.toContain('Rejected');
    expect(card.text).toContain('Shadow (will not run)');
    expect(buttonIds(card)).toEqual([ACTION_IDS.wouldApprove, ACTION_IDS.wouldReject, ACTION_IDS.details]);
  });

  it('once answered: who would have decided, after how long, and no more answer buttons', () => {
    const card = approvalCard(view({ decision: 'would_reject', by: 'U0MGR', at: ASKED + 120_000 }));
    const text = texts(card.blocks).join('\n');
    expect(text).toContain('<@U0MGR> *would have rejected* it');
    expect(text).toContain('(120 s after it was asked). Nothing ran.');
    expect(buttonIds(card)).toEqual([ACTION_IDS.details]);
  });
});
