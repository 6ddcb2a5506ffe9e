/**
 * The channel's permissions at the deciding click (invariant 9): the channel rule in force is judged again
 * from the channel's facts now (src/slack/channel-facts.ts, cached briefly), not from what the run saw when
 * it asked. A tool the channel no longer allows (renamed out of `incident-*`, made private, or facts Slack
 * will not give: failing closed) cannot be approved; Reject stays possible. A channel that names approvers
 * judges the clicker by them, whatever the card asked.
 */
import {
  type ChannelRule,
  type ChannelScope,
  channelApprovers,
  channelScope,
  toolRefusal,
} from '../policy/channel-rules.js';
import type { ChannelFactsLookup } from '../slack/channel-facts.js';
import { escapeMrkdwn } from '../slack/mrkdwn.js';
import type { ApprovalRecord } from '../store/index.js';
import type { Decision } from './approvers.js';

type ChannelAtClick =
  | { kind: 'refused'; message: string }
  /** `record` as the channel judges it now (its approvers replaced when the channel names some). */
  | { kind: 'judged'; record: ApprovalRecord };

type ChannelContext = {
  policy: { channels: { rules: readonly ChannelRule[] } };
  channelFacts?: ChannelFactsLookup;
};

/** The channel's scope now (facts looked up again, cached briefly), or null without channel rules. */
export async function channelScopeNow(ctx: ChannelContext, channelId: string): Promise<ChannelScope | null> {
  const rules = ctx.policy.channels.rules;
  if (rules.length === 0 || !ctx.channelFacts) return null;
  return channelScope(rules, await ctx.channelFacts(channelId));
}

export async function channelAtClick(
  ctx: ChannelContext,
  record: ApprovalRecord,
  channelId: string,
  decision: Decision,
): Promise<ChannelAtClick> {
  const scope = await channelScopeNow(ctx, channelId);
  if (scope === null) return { kind: 'judged', record };
  const refusal = toolRefusal(scope, record.tool, record.effect);
  if (refusal !== null && decision === 'approve') {
    return {
      kind: 'refused',
      message: `This channel's permissions do not allow this \`${escapeMrkdwn(record.tool)}\` call now (${escapeMrkdwn(scope.label)}), so it cannot be approved; Reject it, or ask again where it is allowed. Nothing was changed.`,
    };
  }
  const approvers = channelApprovers(scope);
  return { kind: 'judged', record: approvers ? { ...record, approvers } : record };
}
