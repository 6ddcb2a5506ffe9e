/**
 * The policy file's `rules:` section: per gated tool (built-in, custom by name, MCP `<server>__<tool>`),
 * an ordered list of rules; the first whose `when` holds decides the call:
 *
 *   rules:
 *     run_action:
 *       - name: staging restarts
 *         when: { action: restart_service, params.env: staging }
 *         outcome: allow                    # runs without a person (tool must be in approvals.trusted)
 *       - name: prod restarts
 *         when: { params.env: prod }
 *         outcome: ask                      # its own approvers, quorum, expiry, reminders, escalation
 *         approvers: [S0SRELEADS]
 *         quorum: 2
 *     post_message:
 *       - when: { text: { regex: "(?i)password" } }
 *         outcome: deny
 *         reason: never post credentials    # the model is told; nothing runs
 *       - when: { channel: C0INCIDENTS }
 *         outcome: ask
 *         grant: { args: [channel], maxMinutes: 60 }   # "Approve and allow similar calls"
 *
 * A call no rule matches gets the tool's default: ask its approvers (tools.<name>.approvers or
 * approvals.approvers), quorum 1, approvals.* for expiry, reminders and escalation.
 */
import { z } from 'zod';
import { approverList, toolApprovers } from '../approvers/approvers.js';
import { argPath, type Condition, conditionSchema } from './conditions.js';
import { type FreezeCondition, freezeCondition } from './freeze-condition.js';

const wholeNumber = (min: number, max: number, what: string) =>
  z
    .number({ error: `expected ${what}` })
    .int({ error: `expected ${what}` })
    .min(min, { error: `expected at least ${min}` })
    .max(max, { error: `expected at most ${max}` });

/** Minutes an approval waits, or a reminder/escalation delay: at most a week. */
const minutes = wholeNumber(1, 10_080, 'a whole number of minutes');

/** Points of an approval's life, in percent of the time to expiry, when its thread is reminded. */
const remindAtPercent = z
  .array(wholeNumber(1, 99, 'a percentage from 1 to 99'))
  .max(5, { error: 'expected at most 5 reminders' })
  .refine((xs) => new Set(xs).size === xs.length, { error: 'expected each percentage once' })
  .transform((xs) => [...xs].sort((a, b) => a - b));

/** What an "Approve and allow similar calls" grant covers: the same values of these arguments. */
const grantSchema = z.strictObject({
  args: z.array(argPath).min(1, { error: 'expected the arguments whose values a grant keeps' }).max(10),
  /** The longest time an approver may choose. */
  maxMinutes: wholeNumber(1, 1_440, 'a whole number of minutes (at most a day)'),
});
export type GrantSpec = z.output<typeof grantSchema>;

/**
 * `breakGlass` on a deny rule: these people (users, groups, on-call, as `approvers`) may override the deny
 * for one call, giving a reason and an incident reference; `auditChannel` is told of each override.
 */
const breakGlassSchema = z.strictObject({
  approvers: approverList.min(1, { error: 'expected at least one person who may break glass' }),
  auditChannel: z
    .string()
    .regex(/^[CG][A-Z0-9]{2,}$/, { error: 'expected a Slack channel id such as C0AUDIT' })
    .optional(),
});

const ASK_ONLY = [
  'approvers',
  'quorum',
  'selfApproval',
  'expiresAfterMinutes',
  'remindAtPercent',
  'escalateTo',
  'escalateAfterMinutes',
  'grant',
] as const;

const ruleInput = z.strictObject({
  /** Shown on cards, in the audit log and by `loopgate policy test`. */
  name: z.string().min(1).max(80, { error: 'expected at most 80 characters' }).optional(),
  /**
   * Every condition must hold; no `when` matches every call. `freeze` is not an argument but whether a
   * change freeze is in force (src/policy/freeze-condition.ts); every other key is an argument path.
   */
  when: z
    .object({ freeze: freezeCondition.optional() })
    .catchall(conditionSchema)
    .superRefine((when, ctx) => {
      for (const key of Object.keys(when)) {
        if (key !== 'freeze' && !argPath.safeParse(key).success) {
          ctx.addIssue({
            code: 'custom',
            path: [key],
            message: 'expected an argument name or a dotted path such as params.env',
          });
        }
      }
    })
    .default({}),
  outcome: z.enum(['allow', 'deny', 'ask'], { error: 'expected allow, deny or ask' }),
  /** Required for deny: what the model is told. */
  reason: z.string().min(1).max(500, { error: 'expected at most 500 characters' }).optional(),
  approvers: toolApprovers.optional(),
  /** Distinct approvers needed; the requester never counts unless selfApproval. */
  quorum: wholeNumber(1, 10, 'a whole number of approvers').optional(),
  selfApproval: z.boolean({ error: 'expected true or false' }).optional(),
  expiresAfterMinutes: minutes.optional(),
  remindAtPercent: remindAtPercent.optional(),
  escalateTo: toolApprovers.optional(),
  escalateAfterMinutes: minutes.optional(),
  grant: grantSchema.optional(),
  /** Deny rules only: who may override the deny for one call, with a reason (src/policy/break-glass.ts). */
  breakGlass: breakGlassSchema.optional(),
});

function ruleProblems(rule: z.output<typeof ruleInput>, ctx: z.core.$RefinementCtx): void {
  if (rule.outcome === 'deny' && rule.reason === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['reason'],
      message: 'required for outcome deny (the model is told it)',
    });
  }
  if (rule.outcome !== 'deny' && rule.breakGlass !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['breakGlass'], message: 'only for outcome deny' });
  }
  if (rule.outcome !== 'ask') {
    for (const key of ASK_ONLY) {
      if (rule[key] !== undefined) {
        ctx.addIssue({ code: 'custom', path: [key], message: 'only for outcome ask' });
      }
    }
    return;
  }
  if (rule.reason !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['reason'], message: 'only for outcome deny' });
  }
  const quorum = rule.quorum ?? 1;
  if (quorum > 1 && rule.grant) {
    ctx.addIssue({
      code: 'custom',
      path: ['grant'],
      message: `not with quorum ${quorum}: one person's grant would stand in for ${quorum} approvals`,
    });
  }
  const listed = rule.approvers;
  // A group or an on-call rotation may hold enough people; only a list of users alone is countable.
  if (listed?.every((id) => typeof id === 'string' && !id.startsWith('S')) && listed.length < quorum) {
    ctx.addIssue({
      code: 'custom',
      path: ['quorum'],
      message: `${quorum} approvers needed but only ${listed.length} listed in approvers`,
    });
  }
  if (
    rule.escalateAfterMinutes !== undefined &&
    rule.expiresAfterMinutes !== undefined &&
    rule.escalateAfterMinutes >= rule.expiresAfterMinutes
  ) {
    ctx.addIssue({
      code: 'custom',
      path: ['escalateAfterMinutes'],
      message: `must be less than expiresAfterMinutes (${rule.expiresAfterMinutes}), or the approval expires first`,
    });
  }
}

export interface RuleCondition {
  path: string;
  /** `path` split at its dots, once. */
  parts: readonly string[];
  condition: Condition;
}

const ruleSchema = ruleInput.superRefine(ruleProblems).transform((rule) => {
  const { when, ...rest } = rule;
  const { freeze, ...args } = when;
  const conditions: RuleCondition[] = Object.entries(args).map(([path, condition]) => ({
    path,
    parts: path.split('.'),
    condition: condition as Condition,
  }));
  return { ...rest, conditions, ...(freeze ? { freeze: freeze as FreezeCondition } : {}) };
});
export type Rule = z.output<typeof ruleSchema>;

const toolName = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, { error: 'expected a tool name' });

/** `rules: { <tool>: [rule, ...] }`. */
export const rulesSection = z.record(
  toolName,
  z
    .array(ruleSchema, { error: 'expected a list of rules' })
    .max(200, { error: 'expected at most 200 rules' }),
);
export type RulesSection = z.output<typeof rulesSection>;

/** Keys `approvals:` gains for rules, reminders and escalation (spread into its schema). */
export const approvalsRuleKeys = {
  /** Reminders in the card's thread at these points of every approval's time, e.g. [50, 90]. */
  remindAtPercent: remindAtPercent.default([]),
  /** Added as approvers (and told) when an approval is still undecided after escalateAfterMinutes. */
  escalateTo: toolApprovers.optional(),
  escalateAfterMinutes: minutes.optional(),
  /** Write/notify tools whose `allow` rules the operator trusts to run calls without a person. */
  trusted: z.array(toolName).default([]),
} as const;
