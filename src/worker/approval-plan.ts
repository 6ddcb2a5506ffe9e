/**
 * Turns the policy's verdict on each gated call of a pause into the approval record to store: asked of
 * people (whom, how many, until when), or decided at once by an `allow`/`deny` rule or a grant. Decided
 * records are stored exactly like clicked decisions (same record, same ledger entry, audited), so an
 * allowed call runs through the same execution ledger as an approved one.
 */

import type { GroupMembers } from '../approvers/groups.js';
import { shadowDecisionReason } from '../config/shadow-mode.js';
import type { GatedCall } from '../loop/gated-calls.js';
import { toolSchema } from '../loop/tool-schemas.js';
import type { AskDecision, GateDecision } from '../policy/gate.js';
import { coveringGrants, grantRefusal } from '../policy/grants.js';
import type { RunSlackContext } from '../slack/notifier-port.js';
import type { NewApproval } from '../store/approvals/approval-store.js';
import type { RunPolicy, WorkerRuntime } from './runtime.js';

/** A tool schema larger than this is not kept on the approval: the card then offers no Edit. */
const MAX_SCHEMA_CHARS = 20_000;

/** The policy's verdict; a runtime without rules asks the tool's approvers, as before rules existed. */
export function gateOf(policy: RunPolicy, call: GatedCall): GateDecision {
  if (policy.gate) return policy.gate(call.tool, call.args);
  return {
    kind: 'ask',
    rule: null,
    approvers: policy.approversFor(call.tool),
    quorum: 1,
    selfApproval: false,
    expiresAfterMs: policy.approvalTtlMs,
    remindAtPercent: [],
    escalation: null,
    grant: null,
  };
}

function schemaOf(rt: WorkerRuntime, tool: string): Record<string, unknown> | undefined {
  const found = rt.tools.get(tool);
  if (!found) return undefined;
  const { parameters } = toolSchema(found);
  return JSON.stringify(parameters).length <= MAX_SCHEMA_CHARS ? parameters : undefined;
}

function asked(rt: WorkerRuntime, call: GatedCall, ask: AskDecision, now: number): NewApproval {
  const schema = schemaOf(rt, call.tool);
  return {
    call,
    approvers: ask.approvers,
    expiresAt: now + ask.expiresAfterMs,
    policy: {
      ...(ask.rule ? { rule: ask.rule.label } : {}),
      ...(ask.quorum > 1 ? { quorum: ask.quorum } : {}),
      ...(rt.policy.gate ? { selfApproval: ask.selfApproval } : {}),
      ...(ask.grant ? { grantOffer: ask.grant } : {}),
      ...(schema ? { schema } : {}),
      ...(ask.remindAtPercent.length > 0 ? { remindAtPercent: [...ask.remindAtPercent] } : {}),
      ...(ask.escalation ? { escalation: ask.escalation } : {}),
      ...(ask.breakGlassOffered ? { breakGlass: 'offered' as const } : {}),
      ...(ask.approversFrom ? { approversFrom: ask.approversFrom } : {}),
    },
  };
}

/**
 * The approval to store for `call`. `granted` is the grant that covers it (looked up by the caller for
 * asks whose rule offers grants), which approves it in the grant's approver's name.
 */
export function planApproval(
  rt: WorkerRuntime,
  call: GatedCall,
  decision: GateDecision,
  now: number,
  granted?: { grantId: string; by: string; until: number },
): NewApproval {
  const fallback = gateOf({ ...rt.policy, gate: undefined }, call) as AskDecision;
  switch (decision.kind) {
    case 'allow':
      return {
        call,
        approvers: fallback.approvers,
        expiresAt: now + fallback.expiresAfterMs,
        policy: { rule: decision.rule.label },
        decided: { status: 'approved', via: 'rule', reason: `allowed by ${decision.rule.label}` },
      };
    case 'deny':
      if (decision.breakGlass) return breakGlassCard(call, decision, decision.breakGlass, fallback, now);
      return {
        call,
        approvers: fallback.approvers,
        expiresAt: now + fallback.expiresAfterMs,
        policy: { rule: decision.rule.label },
        decided: {
          status: 'rejected',
          via: 'rule',
          reason: `denied by ${decision.rule.label}: ${decision.reason}`,
        },
      };
    case 'ask': {
      const plan = asked(rt, call, decision, now);
      if (!granted) return plan;
      return {
        ...plan,
        decided: {
          status: 'approved',
          via: 'grant',
          by: granted.by,
          reason: `granted by <@${granted.by}> (grant ${granted.grantId}, until ${new Date(granted.until).toISOString()})`,
          grantId: granted.grantId,
        },
      };
    }
  }
}

/**
 * A call denied by a rule that allows break glass: not refused outright but asked of the rule's
 * break-glass approvers on a card offering only Break glass and Reject (the bot judges each click by the
 * rule in force then). Never the requester, whatever selfApproval says.
 */
function breakGlassCard(
  call: GatedCall,
  decision: { rule: { label: string } },
  breakGlass: { approvers: AskDecision['approvers'] },
  fallback: AskDecision,
  now: number,
): NewApproval {
  return {
    call,
    approvers: breakGlass.approvers,
    expiresAt: now + fallback.expiresAfterMs,
    policy: { rule: decision.rule.label, selfApproval: false, breakGlass: 'only' },
  };
}

/**
 * The approval of a call in shadow mode (`why`, src/policy/shadow.ts): a `deny` rule still denies it;
 * otherwise it is stored closed at once as not executed (status `rejected`, via `shadow`), never
 * approved, so no ledger entry exists for it and nothing can run it. It keeps whom the policy would have
 * asked (approvers, rule, quorum, self-approval), so Would approve / Would reject are checked like a
 * real decision.
 */
export function planShadow(
  rt: WorkerRuntime,
  call: GatedCall,
  decision: GateDecision,
  why: string,
  now: number,
): NewApproval {
  // Shadow mode never offers break glass: a deny denies.
  if (decision.kind === 'deny') return planApproval(rt, call, { ...decision, breakGlass: undefined }, now);
  const ask =
    decision.kind === 'ask'
      ? decision
      : { ...(gateOf({ ...rt.policy, gate: undefined }, call) as AskDecision), rule: decision.rule };
  const plan = asked(rt, call, ask, now);
  const { schema: _schema, grantOffer: _grant, ...policy } = plan.policy ?? {};
  return {
    ...plan,
    policy,
    decided: { status: 'rejected', via: 'shadow', reason: shadowDecisionReason(why) },
  };
}

/**
 * The grant of the call's thread that covers it (same tool, same rule, same values of the rule's grant
 * arguments, in force, and in this run when so scoped), for asks whose rule offers grants, and that may
 * approve it as its grantor's approval now (grantRefusal: not the requester's own grant unless the rule
 * allows self-approval, the grantor still an approver of the call, the same channel, quorum 1).
 */
export async function grantFor(
  rt: WorkerRuntime,
  ctx: RunSlackContext,
  run: { runId: string; requester: string },
  call: GatedCall,
  decision: GateDecision,
  now: number,
): Promise<{ grantId: string; by: string; until: number } | undefined> {
  if (decision.kind !== 'ask' || !decision.grant || !decision.rule || !ctx.teamId) return undefined;
  const thread = { teamId: ctx.teamId, channelId: ctx.channelId, threadTs: ctx.threadTs };
  const grants = await rt.store.grants.inThread(thread, now);
  const covering = coveringGrants(grants, {
    tool: call.tool,
    rule: decision.rule.label,
    args: call.args,
    runId: run.runId,
    now,
  });
  const granted = { requester: run.requester, teamId: ctx.teamId, channelId: ctx.channelId, ask: decision };
  for (const grant of covering) {
    const refusal = await grantRefusal(grant, granted, { groups: rt.groups ?? NO_GROUPS, oncall: rt.oncall });
    if (refusal === null) return { grantId: grant.grantId, by: grant.grantedBy, until: grant.expiresAt };
    rt.logger.info(
      { runId: run.runId, grantId: grant.grantId, grantedBy: grant.grantedBy, refusal },
      'grant not used: it may not approve this call',
    );
  }
  return undefined;
}

/** Without a way to ask Slack, no group membership can be confirmed: only approvers named directly count. */
const NO_GROUPS: GroupMembers = {
  has: () => Promise.reject(new Error('no user group lookup in this process')),
};
