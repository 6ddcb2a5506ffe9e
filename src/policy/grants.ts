/**
 * Grants ("Approve and allow similar calls"): an approver approves a call and lets later calls of the same
 * tool, matched by the same rule, with the same values of the arguments that rule names (`grant.args`),
 * run without a card for a while, in the same Slack thread (or only in the same run). A grant lives under
 * its thread's key, so it never crosses threads, channels or tools; each use is audited as "granted by".
 */

import { type ApproverLookups, isApprover } from '../approvers/resolve.js';
import { canonicalJson } from '../loop/hash.js';
import { valueAt } from './conditions.js';
import type { AskDecision } from './gate.js';

export interface Grant {
  grantId: string;
  tool: string;
  /** The rule that offered it (`rule 2 of post_message (incident updates)`): a call another rule decides is not covered. */
  rule: string;
  /** The values of the rule's grant arguments, by argument path. */
  values: Record<string, unknown>;
  scope: 'thread' | 'run';
  /** The run it was granted in (the only run it covers with scope `run`). */
  runId: string;
  teamId: string;
  channelId: string;
  threadTs: string;
  grantedBy: string;
  grantedAt: number;
  expiresAt: number;
  /** The approval it was granted with. */
  approvalId: string;
  /** Who may revoke it besides its grantor: the approvers of the approval it was granted with. */
  approvers: { users: string[]; groups: string[] };
}

/** The values a grant on `argNames` keeps from `args`; null when one of them is absent. */
export function grantValues(args: unknown, argNames: readonly string[]): Record<string, unknown> | null {
  const values: Record<string, unknown> = {};
  for (const name of argNames) {
    const value = valueAt(args, name);
    if (value === undefined) return null;
    values[name] = value;
  }
  return values;
}

interface GrantQuery {
  tool: string;
  rule: string;
  args: unknown;
  runId: string;
  now: number;
}

/** Whether `grant` covers this call: same tool and rule, same values, in force, and in its run if so scoped. */
function grantCovers(grant: Grant, call: GrantQuery): boolean {
  if (grant.tool !== call.tool || grant.rule !== call.rule || call.now >= grant.expiresAt) return false;
  if (grant.scope === 'run' && grant.runId !== call.runId) return false;
  const names = Object.keys(grant.values);
  if (names.length === 0) return false;
  return names.every((name) => {
    const value = valueAt(call.args, name);
    return value !== undefined && canonicalJson(value) === canonicalJson(grant.values[name]);
  });
}

/** `grants` of a thread that cover the call, the latest-expiring first. */
export function coveringGrants(grants: readonly Grant[], call: GrantQuery): Grant[] {
  return grants.filter((g) => grantCovers(g, call)).sort((a, b) => b.expiresAt - a.expiresAt);
}

/** The call a grant would approve, as an Approve click on its card would be checked. */
export interface GrantedCall {
  /** Who asked for the run. */
  requester: string;
  teamId: string;
  channelId: string;
  /** Whom the policy asks for this call now, how many, and whether the requester may approve it. */
  ask: Pick<AskDecision, 'approvers' | 'quorum' | 'selfApproval'>;
}

type GrantRefusal = 'other_channel' | 'quorum' | 'self_approval' | 'not_approver' | 'lookup_failed';

/**
 * Why `grant` may not approve `call` in its grantor's name, or null when it may. A grant counts as its
 * grantor's approval and gets every check an Approve click would: the call is in the grant's channel, one
 * approval is enough, the grantor is not the requester (unless the rule allows self-approval), and the
 * grantor is one of the call's approvers now (named, or in one of its groups as Slack says now).
 */
export async function grantRefusal(
  grant: Grant,
  call: GrantedCall,
  lookups: ApproverLookups,
): Promise<GrantRefusal | null> {
  if (grant.teamId !== call.teamId || grant.channelId !== call.channelId) return 'other_channel';
  if (call.ask.quorum > 1) return 'quorum';
  if (grant.grantedBy === call.requester && !call.ask.selfApproval) return 'self_approval';
  const approver = await isApprover(call.ask.approvers, grant.grantedBy, lookups);
  return approver.ok ? null : approver.reason;
}

/** What a grant covers, in words: `post_message with channel = "C0INC" in this thread until 14:00`. */
export function grantScopeText(grant: Pick<Grant, 'tool' | 'values' | 'scope'>): string {
  const values = Object.entries(grant.values)
    .map(([k, v]) => `${k} = ${JSON.stringify(v)}`)
    .join(', ');
  return `\`${grant.tool}\` with ${values} in this ${grant.scope === 'run' ? 'run' : 'thread'}`;
}
