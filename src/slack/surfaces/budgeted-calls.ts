/**
 * The agent-surface calls through the installation's shared Slack rate budget (src/slack/rate):
 * streams carry answers (they wait in line with answers' priority), session statuses and titles are
 * decorations (only the latest of a thread is worth sending; dropped under pressure). A stream's start
 * is Tier 2, the scarcest: `streamRoom` takes a start slot only when one is free now and no call waits
 * for one (stops of streams already started wait in line, so they go first), and the thread's next start
 * uses it; without one the run posts its answer whole.
 */
import type { SlackBudget } from '../rate/slack-budget.js';
import type { SurfaceCalls } from './surface-calls.js';

/** A start slot taken by `streamRoom` and not used within this long is forgotten. */
const PREPAID_TTL_MS = 5 * 60_000;

export function budgetedSurfaceCalls(calls: SurfaceCalls, budget: SlackBudget): SurfaceCalls {
  const prepaid = new Map<string, number>();
  const usePrepaid = (channel: string, threadTs: string): boolean => {
    const now = Date.now();
    for (const [key, at] of prepaid) if (now - at > PREPAID_TTL_MS) prepaid.delete(key);
    return prepaid.delete(`${channel} ${threadTs}`);
  };
  const answer = <T>(method: string, channel: string, call: () => Promise<T>) =>
    budget.call({ method, channel, priority: 'answer' }, call);
  return {
    start: (args) =>
      usePrepaid(args.channel, args.thread_ts)
        ? calls.start(args)
        : answer('chat.startStream', args.channel, () => calls.start(args)),
    append: (args) => answer('chat.appendStream', args.channel, () => calls.append(args)),
    stop: (args) => answer('chat.stopStream', args.channel, () => calls.stop(args)),
    update: (args) => answer('chat.update', args.channel, () => calls.update(args)),
    setStatus: (args) =>
      budget.decorate(
        {
          method: 'agents.sessions.setStatus',
          channel: args.channel_id,
          key: `${args.channel_id} ${args.thread_ts} status`,
        },
        () => calls.setStatus(args),
      ),
    rename: (args) =>
      budget.decorate(
        {
          method: 'agents.sessions.rename',
          channel: args.channel_id,
          key: `${args.channel_id} ${args.thread_ts} title`,
        },
        () => calls.rename(args),
      ),
    async streamRoom(channel, threadTs) {
      const room = await budget.tryNow({ method: 'chat.startStream', channel, priority: 'answer' }, 0);
      if (room) prepaid.set(`${channel} ${threadTs}`, Date.now());
      return room;
    },
  };
}
