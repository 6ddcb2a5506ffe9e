/**
 * `loopgate policy test --channel`: which channel rule (src/policy/channel-rules.ts) decides a call asked
 * from a channel given as an id (`C0123`, `D0123`), a name (`#incident-42`) or `dm`. The CLI does not ask
 * Slack, so only what the argument says is known: a name's channel kind, and a C…/G… id's name and kind,
 * are unknown, and rules that need them are judged as the worker judges facts Slack would not give
 * (failing closed).
 */
import { enabledGatedTools, type Policy } from '../config/policy.js';
import {
  type ChannelFacts,
  type ChannelScope,
  channelScope,
  channelText,
  toolRefusal,
  withChannelApprovers,
} from '../policy/channel-rules.js';
import type { GateDecision } from '../policy/gate.js';

/** The facts `--channel` gives, or null when it is none of the accepted forms. */
export function channelFactsOf(text: string): ChannelFacts | null {
  if (text === 'dm') return { id: 'D', kind: 'dm' };
  if (text.startsWith('#') && text.length > 1) return { id: '', name: text.slice(1), kind: null };
  if (/^D[A-Z0-9]{2,}$/.test(text)) return { id: text, kind: 'dm' };
  if (/^[CG][A-Z0-9]{2,}$/.test(text)) return { id: text, kind: null };
  return null;
}

const isGated = (policy: Pick<Policy, 'tools' | 'mcp'>, tool: string) =>
  enabledGatedTools(policy).some((t) => t === tool || (t.endsWith('__') && tool.startsWith(t)));

interface ChannelExplanation {
  channel: string;
  scope: ChannelScope;
  /** Why the tool is not offered there, or null. */
  refused: string | null;
  /** The decision with the channel's approvers in place. */
  decision: GateDecision;
  text: string;
}

export function explainChannel(
  policy: Policy,
  tool: string,
  decision: GateDecision,
  facts: ChannelFacts,
): ChannelExplanation {
  const scope = channelScope(policy.channels.rules, facts);
  const refused = toolRefusal(scope, tool, isGated(policy, tool) ? 'write' : 'read');
  const decided = withChannelApprovers(decision, scope);
  const channel = facts.id === '' && facts.name ? `#${facts.name} (kind unknown)` : channelText(facts);
  const lines = [`channel ${channel}: ${scope.label}`];
  if (refused) {
    lines.push(
      `not offered there: ${refused}; the model is not offered ${tool}, and a call anyway reads channel_not_allowed`,
    );
  } else if (decided !== decision) {
    lines.push("the channel's approvers replace the tool's or the rule's for calls asked there");
  }
  return { channel, scope, refused, decision: decided, text: `${lines.join('\n')}\n` };
}
