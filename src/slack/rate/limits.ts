/**
 * The Slack rate budgets loopgate keeps to (platform-notes.md, "Slack Web API"): Slack limits each app
 * per workspace per method by tier, and `chat.postMessage` per channel, shared by every process using
 * the token. One bot token is one workspace, so a budget is named by its method (and channel for posts).
 * Slack grants some apps more: raise the numbers with the policy's `slack.rateLimits`.
 */
import type { BudgetShape } from '../../store/budget/slack-budget-store.js';

export interface SlackRateLimits {
  /** Tier 2 methods (chat.startStream, chat.stopStream, reactions.remove, …) per minute. Default 20. */
  tier2PerMinute: number;
  /** Tier 3 methods (chat.update, reactions.add, agents.sessions.setStatus, …) per minute. Default 50. */
  tier3PerMinute: number;
  /** Tier 4 methods (chat.appendStream, chat.postEphemeral, views.*, …) per minute. Default 100. */
  tier4PerMinute: number;
  /** chat.postMessage per channel per minute. Default 60 (about one a second). */
  postsPerMinutePerChannel: number;
}

export const DEFAULT_SLACK_RATE_LIMITS: Readonly<SlackRateLimits> = {
  tier2PerMinute: 20,
  tier3PerMinute: 50,
  tier4PerMinute: 100,
  postsPerMinutePerChannel: 60,
};

type Limit = 'tier2' | 'tier3' | 'tier4' | 'post';

/** The limit of each method loopgate calls; methods not listed have no budget (rare calls). */
const METHOD_LIMITS: Readonly<Record<string, Limit>> = {
  'chat.postMessage': 'post',
  'chat.startStream': 'tier2',
  'chat.stopStream': 'tier2',
  'chat.appendStream': 'tier4',
  'chat.update': 'tier3',
  'chat.delete': 'tier3',
  'chat.postEphemeral': 'tier4',
  'chat.getPermalink': 'tier4',
  'reactions.add': 'tier3',
  'reactions.remove': 'tier2',
  'agents.sessions.setStatus': 'tier3',
  'agents.sessions.rename': 'tier3',
  'assistant.threads.setStatus': 'tier3',
  'assistant.threads.setTitle': 'tier3',
  'assistant.threads.setSuggestedPrompts': 'tier3',
  'views.open': 'tier4',
  'views.update': 'tier4',
  'views.publish': 'tier4',
  'usergroups.users.list': 'tier2',
  'conversations.members': 'tier4',
  'conversations.info': 'tier3',
  'users.info': 'tier4',
  'users.lookupByEmail': 'tier3',
};

/**
 * A budget's steady interval and burst. Slack tolerates short bursts without saying how long; loopgate
 * allows itself about a tenth of a minute's calls at once, less one kept in reserve for the clocks and
 * network of many processes (at least 1).
 */
export function budgetShape(method: string, limits: SlackRateLimits): BudgetShape | null {
  const limit = METHOD_LIMITS[method];
  if (limit === undefined) return null;
  const perMinute = limit === 'post' ? limits.postsPerMinutePerChannel : limits[`${limit}PerMinute` as const];
  const burst =
    limit === 'post' ? Math.max(1, Math.round(perMinute / 30)) : Math.max(1, Math.round(perMinute / 10) - 1);
  return { intervalMs: 60_000 / perMinute, burst };
}

/** The budget a call counts against: its method's, and the channel's for posts. */
export function budgetParts(method: string, channel: string | undefined): string[] {
  return METHOD_LIMITS[method] === 'post' ? [method, channel ?? ''] : [method];
}

/** One line per budget in force, for `loopgate doctor`-style output and logs. */
export function describeLimits(limits: SlackRateLimits): string[] {
  return [
    `chat.postMessage: ${limits.postsPerMinutePerChannel}/min per channel`,
    `Tier 2 (chat.startStream, chat.stopStream, reactions.remove, …): ${limits.tier2PerMinute}/min`,
    `Tier 3 (chat.update, reactions.add, agents.sessions.setStatus, …): ${limits.tier3PerMinute}/min`,
    `Tier 4 (chat.appendStream, chat.postEphemeral, views.*, …): ${limits.tier4PerMinute}/min`,
  ];
}
