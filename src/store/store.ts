import { ApprovalStore } from './approvals/approval-store.js';
import { AuditLog } from './audit/audit-log.js';
import { BudgetAskStore } from './budget/budget-ask-store.js';
import { RateLimits } from './budget/rate-limits.js';
import { SlackBudgetStore } from './budget/slack-budget-store.js';
import { createStoreContext, type StoreContext, type StoreOptions } from './context.js';
import { FeedbackStore } from './feedback/feedback-store.js';
import { GrantStore } from './grants/grant-store.js';
import { LeaseStore } from './leases.js';
import { LedgerStore } from './ledger/ledger-store.js';
import { RunResults } from './runs/result-store.js';
import { RunIndex } from './runs/run-index.js';
import { RunStore } from './runs/run-store.js';
import type { RedisClient } from './scripts.js';
import { ThreadMemory } from './threads/thread-memory.js';
import { WorkerNotices } from './worker-notices.js';

/** Everything the bot and the workers persist, over one Redis connection. */
export interface Store {
  runs: RunStore;
  leases: LeaseStore;
  approvals: ApprovalStore;
  /** Runs' asks for more budget (budgets.extend). */
  budgetAsks: BudgetAskStore;
  ledger: LedgerStore;
  audit: AuditLog;
  index: RunIndex;
  threads: ThreadMemory;
  rates: RateLimits;
  grants: GrantStore;
  /** Long tool results kept for read_result. */
  results: RunResults;
  /** Feedback on answers (the feedback buttons). */
  feedback: FeedbackStore;
  /** Slack rate budgets shared by every process (src/slack/rate). */
  slackBudget: SlackBudgetStore;
  /** Notices workers leave for the bot's /readyz (a worker serving no metrics). */
  workerNotices: WorkerNotices;
  /** The key scheme and options in use (tests and tools). */
  context: StoreContext;
}

/**
 * Builds the store on a connection (use `createRedisConnection(url, 'store')` from src/queue). The
 * connection must not have an ioredis `keyPrefix`: the store's keys carry their own prefix.
 */
export function createStore(redis: RedisClient, options: StoreOptions = {}): Store {
  if (redis.options && 'keyPrefix' in redis.options && redis.options.keyPrefix) {
    throw new TypeError('the store connection must not set an ioredis keyPrefix; use the prefix option');
  }
  const context = createStoreContext(redis, options);
  const index = new RunIndex(context);
  const audit = new AuditLog(context);
  return {
    runs: new RunStore(context, index),
    leases: new LeaseStore(context),
    approvals: new ApprovalStore(context, audit),
    budgetAsks: new BudgetAskStore(context, audit),
    ledger: new LedgerStore(context),
    audit,
    index,
    threads: new ThreadMemory(context),
    rates: new RateLimits(context),
    grants: new GrantStore(context, audit),
    results: new RunResults(context),
    feedback: new FeedbackStore(context),
    slackBudget: new SlackBudgetStore(context),
    workerNotices: new WorkerNotices(context),
    context,
  };
}
