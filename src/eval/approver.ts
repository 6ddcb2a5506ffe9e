/**
 * The runner's stand-in for the worker and the people on each gated call. The policy's rules decide first,
 * as the worker applies them (src/policy/gate.ts, src/worker/approval-plan.ts): `allow` approves and
 * `deny` rejects with the rule's reason, nobody asked. What a rule (or the tool's default) asks of people
 * is decided by the task's scripted approver: the first of its rules that matches the call approves it
 * (with a quorum, each distinct approver's vote), rejects it with a reason, lets it expire, or edits it.
 * An edit opens a new round for the edited arguments, gated by the rules again as the bot gates it
 * (src/bot/edit.ts): denied, allowed, or asked, where the edit counts as the editor's approval when the
 * round's rules let the editor approve. A call no scripted rule matches is rejected, as a careful
 * approver rejects what nobody asked for.
 *
 * With rules `measure`, no rule decides: every gated call is asked of people, and each record says whether
 * a rule would have allowed it (the "not needed (rule)" count). A call the script does not cover is then
 * decided by the person as its rule would have (approved when allowed, rejected with the rule's reason
 * when denied), so the two modes differ in who was asked, not in what happened.
 */
import type { Policy } from '../config/policy.js';
import type { Decision, GatedCall } from '../loop/gated-calls.js';
import { argsHash } from '../loop/hash.js';
import type { AnyTool } from '../loop/tool-contract.js';
import { type AskDecision, decideGate, defaultAsk, type GateDecision } from '../policy/gate.js';
import { contains, deepMerge } from './merge.js';
import type { ApproverRule, CallMatch } from './task-schema.js';
import type { AskedApproval } from './transcript.js';

export const UNEXPECTED_CALL_REASON = 'not something I expected to approve for this request';

export const RULES_MODES = ['enforce', 'measure'] as const;
/** enforce: the rules decide as in production; measure: every gated call is asked of people. */
export type RulesMode = (typeof RULES_MODES)[number];

/** Rounds one call may go through (an edit of an edited call...), so a task cannot edit for ever. */
const MAX_ROUNDS = 5;

export function callMatches(match: CallMatch | undefined, tool: string, args: unknown): boolean {
  if (!match) return true;
  return match.tool === tool && (match.args === undefined || contains(args, match.args));
}

export interface ApprovalContext {
  policy: Policy;
  /** The tools of the run that made the call (their schemas check edited arguments). */
  tools: ReadonlyMap<string, AnyTool>;
  rules: RulesMode;
  approver: readonly ApproverRule[];
  requester: string;
  /** Index of the person's run the call belongs to. */
  run: number;
  /** The sub-agent whose run made the call. */
  agent?: string;
}

/** What became of one gated call: the decision the engine applies, and a record per round. */
interface CallVerdict {
  decision: Decision;
  records: AskedApproval[];
}

/** The person who edited the call, for the rounds after the edit. */
interface Edit {
  by: string;
}

const list = (by: string | string[] | undefined): string[] => (by === undefined ? [] : [by].flat());

/**
 * May `user` approve under `ask`? Listed users may; when the ask names user groups, a user the task names
 * is taken to be a member (the eval has no Slack to look groups up). The requester may not approve unless
 * the ask allows self-approval.
 */
function mayApprove(ask: AskDecision, user: string, requester: string, named: boolean): boolean {
  const approver = ask.approvers.users.includes(user) || (named && ask.approvers.groups.length > 0);
  return approver && (user !== requester || ask.selfApproval);
}

/** Who votes when the task names nobody: the ask's listed users who may approve, in order. */
function defaultVoters(ask: AskDecision, requester: string): string[] {
  const users = ask.approvers.users.filter((u) => mayApprove(ask, u, requester, false));
  if (users.length > 0 || ask.approvers.groups.length === 0) return users;
  return Array.from({ length: ask.quorum }, (_, i) => `U0GROUPMEMBER${i + 1}`);
}

/** The ask people answer: the rule's (or default) ask; under `measure`, the default for allow/deny too. */
function askOf(ctx: ApprovalContext, call: GatedCall, gate: GateDecision): AskDecision {
  return gate.kind === 'ask' ? gate : defaultAsk(ctx.policy, call.tool);
}

function record(
  ctx: ApprovalContext,
  call: GatedCall,
  round: number,
  gate: GateDecision,
  fields: Omit<AskedApproval, 'run' | 'call' | 'round' | 'ruleWouldAllow'>,
): AskedApproval {
  return {
    run: ctx.run,
    ...(ctx.agent ? { agent: ctx.agent } : {}),
    call,
    round,
    ...(gate.kind !== 'allow' && gate.kind !== 'deny' && gate.rule ? { rule: gate.rule.label } : {}),
    ...fields,
    ruleWouldAllow: gate.kind === 'allow',
  };
}

/** The decision for the model's call `original`, once the round deciding it has arguments `call.args`. */
function decisionOf(
  original: GatedCall,
  call: GatedCall,
  edit: Edit | undefined,
  d: { kind: Decision['kind']; by?: string; reason?: string },
): Decision {
  const base = {
    toolCallId: original.toolCallId,
    ...(d.by === undefined ? {} : { by: d.by }),
    ...(d.reason === undefined ? {} : { reason: d.reason }),
  };
  if (d.kind !== 'approved') return { ...base, kind: d.kind };
  return {
    ...base,
    kind: 'approved',
    argsHash: call.argsHash,
    ...(edit ? { edited: { args: call.args, by: edit.by } } : {}),
    // The plan the simulated approver was shown; an edited call's plan is made when it is asked again.
    ...(!edit && original.plan ? { plan: original.plan } : {}),
  };
}

/**
 * The edited call: the approver's arguments merged over the round's (objects key by key), checked with the
 * tool's schema as the engine checks them again before running. Null when nothing changed.
 * @throws Error when the schema refuses them: the task's edit is wrong, not the model.
 */
function editedCall(ctx: ApprovalContext, call: GatedCall, patch: Record<string, unknown>): GatedCall | null {
  const tool = ctx.tools.get(call.tool);
  const parsed = tool?.parameters.safeParse(deepMerge(call.args, patch));
  if (!parsed?.success) {
    throw new Error(
      `the scripted edit of ${call.tool} gives arguments its schema refuses${parsed ? `: ${parsed.error.message}` : ''}`,
    );
  }
  const hash = argsHash(parsed.data);
  if (hash === call.argsHash) return null;
  return { ...call, args: parsed.data, argsHash: hash, preview: undefined };
}

function decideRound(
  ctx: ApprovalContext,
  original: GatedCall,
  call: GatedCall,
  round: number,
  edit: Edit | undefined,
): CallVerdict {
  const gate = decideGate(ctx.policy, call.tool, call.args);
  if (ctx.rules === 'enforce' && gate.kind === 'allow') {
    const reason = `allowed by ${gate.rule.label}${edit ? ` (edited by <@${edit.by}>)` : ''}`;
    return {
      decision: decisionOf(original, call, edit, { kind: 'approved', reason }),
      records: [
        record(ctx, call, round, gate, {
          decision: 'approved',
          decidedBy: 'rule',
          rule: gate.rule.label,
          reason,
        }),
      ],
    };
  }
  if (ctx.rules === 'enforce' && gate.kind === 'deny') {
    // An edit a deny rule refuses never becomes a round (the Edit form says why); the editor rejects.
    const reason = `denied by ${gate.rule.label}: ${gate.reason}`;
    const by = edit ? { by: edit.by } : {};
    return {
      decision: decisionOf(original, call, undefined, { kind: 'rejected', reason, ...by }),
      records: [
        record(ctx, call, round, gate, {
          decision: 'rejected',
          decidedBy: edit ? 'edit' : 'rule',
          rule: gate.rule.label,
          reason,
          ...by,
        }),
      ],
    };
  }
  const ask = askOf(ctx, call, gate);
  const votes: string[] = [];
  if (edit && mayApprove(ask, edit.by, ctx.requester, true)) {
    // Editing counts as the editor's approval of the edited call (src/bot/edit.ts).
    if (ask.quorum <= 1) {
      const reason = 'approved as edited';
      return {
        decision: decisionOf(original, call, edit, { kind: 'approved', by: edit.by, reason }),
        records: [
          record(ctx, call, round, gate, { decision: 'approved', decidedBy: 'edit', by: edit.by, reason }),
        ],
      };
    }
    votes.push(edit.by);
  }
  return personDecides(ctx, original, call, round, edit, gate, ask, votes);
}

function personDecides(
  ctx: ApprovalContext,
  original: GatedCall,
  call: GatedCall,
  round: number,
  edit: Edit | undefined,
  gate: GateDecision,
  ask: AskDecision,
  votes: string[],
): CallVerdict {
  const rule = ctx.approver.find((r) => callMatches(r.match, call.tool, call.args));
  const named = list(rule?.by);
  const people = named.length > 0 ? named : defaultVoters(ask, ctx.requester);
  const first = people[0] ?? 'U0APPROVER';
  const quorum = ask.quorum > 1 ? { quorum: ask.quorum } : {};
  const asked = (fields: Omit<AskedApproval, 'run' | 'call' | 'round' | 'ruleWouldAllow'>) =>
    record(ctx, call, round, gate, { ...quorum, ...fields });
  const rejected = (by: string, reason: string | undefined): CallVerdict => ({
    decision: decisionOf(original, call, undefined, {
      kind: 'rejected',
      by,
      ...(reason ? { reason } : {}),
    }),
    records: [asked({ decision: 'rejected', decidedBy: 'person', by, ...(reason ? { reason } : {}) })],
  });
  const expired = (why: string | undefined, voted: string[]): CallVerdict => ({
    decision: decisionOf(original, call, undefined, { kind: 'expired' }),
    records: [
      asked({
        decision: 'expired',
        decidedBy: 'person',
        ...(voted.length > 0 ? { votes: voted } : {}),
        ...(why ? { reason: why } : {}),
      }),
    ],
  });
  if (!rule) {
    // Measuring: a call the script does not cover is decided as its rule would have, so only who decided
    // differs from enforcing (a person, counted), not what happened.
    if (gate.kind === 'allow') {
      return {
        decision: decisionOf(original, call, edit, { kind: 'approved', by: first }),
        records: [asked({ decision: 'approved', decidedBy: 'person', by: first })],
      };
    }
    if (gate.kind === 'deny') return rejected(first, `denied by ${gate.rule.label}: ${gate.reason}`);
    return rejected(first, UNEXPECTED_CALL_REASON);
  }
  switch (rule.decide) {
    case 'reject':
      return rejected(first, rule.reason);
    case 'expire':
      return expired(undefined, votes);
    case 'approve': {
      const voters = people.filter(
        (u) => !votes.includes(u) && mayApprove(ask, u, ctx.requester, named.length > 0),
      );
      const all = [...votes, ...voters].slice(0, Math.max(1, ask.quorum));
      if (all.length < ask.quorum) {
        return expired(`${all.length} of ${ask.quorum} approvals before it expired`, all);
      }
      const by = all.at(-1)!;
      return {
        decision: decisionOf(original, call, edit, { kind: 'approved', by }),
        records: [
          asked({
            decision: 'approved',
            decidedBy: 'person',
            by,
            ...(ask.quorum > 1 ? { votes: all } : {}),
          }),
        ],
      };
    }
    case 'edit': {
      const next = editedCall(ctx, call, rule.args ?? {});
      if (!next) return personDecides(ctx, original, call, round, edit, gate, ask, votes);
      if (round >= MAX_ROUNDS)
        throw new Error(`${call.tool} was edited ${round} times: the task edits for ever`);
      const editor = { by: first };
      const later = decideRound(ctx, original, next, round + 1, editor);
      return {
        decision: later.decision,
        records: [asked({ decision: 'edited', decidedBy: 'person', by: first }), ...later.records],
      };
    }
  }
}

/** How one gated call is decided: by a rule, or by the scripted people through as many rounds as edits. */
export function decideCall(ctx: ApprovalContext, call: GatedCall): CallVerdict {
  return decideRound(ctx, call, call, 1, undefined);
}
