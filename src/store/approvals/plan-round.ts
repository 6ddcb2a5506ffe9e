/**
 * The round that asks again for an approved call whose plan changed before it ran (src/loop/plan.ts):
 * the same call, asked of the same people under the same rule and quorum for as long as the first round
 * was, showing the new plan. Nothing of the earlier decision carries over: no decider, no votes, and a
 * call an allow rule or a grant approved is asked of people, since the rule or grant saw no plan.
 */
import type { CallPlan } from '../../loop/gated-calls.js';
import { nextRoundOf } from '../ids.js';
import type { ApprovalRecord } from '../records.js';

export function planRound(approved: ApprovalRecord, plan: CallPlan, now: number): ApprovalRecord {
  const {
    via: _via,
    grantId: _grant,
    votes: _votes,
    shadowDecision: _shadow,
    escalatedAt: _escalated,
    editedTo: _editedTo,
    editOf: _editOf,
    replanOf: _replanOf,
    ...kept
  } = approved;
  return {
    ...kept,
    approvalId: nextRoundOf(approved.approvalId),
    createdAt: now,
    expiresAt: now + Math.max(60_000, approved.expiresAt - approved.createdAt),
    status: 'pending',
    decidedBy: null,
    decidedAt: null,
    decisionReason: null,
    card: null,
    plan,
    replanOf: { approvalId: approved.approvalId, ...(approved.plan ? { plan: approved.plan } : {}) },
  };
}
