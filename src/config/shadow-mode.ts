/**
 * Shadow mode (docs/approvals.md, "Shadow mode"): which gated calls are shown to people but never run.
 * A channel listed in `channels.shadow` puts every call asked from it in shadow mode; otherwise the tool's
 * own `mode` (built-in settings, custom entry, MCP tool or server) decides, else `approvals.mode`. Pure:
 * the worker stores a shadow call as decided at once (never approved, so it never gets a ledger entry),
 * and `loopgate policy test` / `check-config` print the same answer.
 */

import type { Policy } from './policy.js';
import { ownModeOf } from './policy-limits.js';

type ShadowPolicy = Pick<Policy, 'approvals' | 'channels' | 'tools' | 'custom' | 'mcp'>;

/**
 * Why a gated call of `tool` asked from `channelId` (absent: any channel) is in shadow mode, as people
 * read it, or null when it runs as usual.
 */
export function shadowReason(policy: ShadowPolicy, tool: string, channelId?: string): string | null {
  if (channelId !== undefined && policy.channels.shadow.includes(channelId))
    return `channel ${channelId} is in channels.shadow`;
  const own = ownModeOf(policy, tool);
  if (own === 'shadow') return `${tool} has mode: shadow`;
  if (own === 'enforce') return null;
  return policy.approvals.mode === 'shadow' ? 'approvals.mode is shadow' : null;
}

/** The decision reason stored on a shadow call's approval record (and told to the model). */
const SHADOW_REASON_PREFIX = 'shadow mode';

export function shadowDecisionReason(why: string): string {
  return `${SHADOW_REASON_PREFIX} (${why}): not executed`;
}
