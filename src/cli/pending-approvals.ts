/**
 * Approvals for `loopgate approvals`. The default is the store's own listing (pending and not yet
 * expired). `overdue` also returns approvals still recorded as pending after their expiry: a worker's
 * expire job normally marks them `expired` within moments, so any listed here point at stopped workers
 * or a lost job. Read straight from the pending index, without the listing's clean-up of it.
 */
import type { ApprovalRecord, Store } from '../store/index.js';

export async function pendingApprovals(
  store: Store,
  now: number,
  limit: number,
  overdue: boolean,
): Promise<ApprovalRecord[]> {
  if (!overdue) return store.approvals.listPending(now, limit);
  const ids = await store.context.redis.zrangebyscore(
    store.context.keys.pendingApprovals,
    '-inf',
    '+inf',
    'LIMIT',
    0,
    limit,
  );
  const records = await Promise.all(ids.map((id) => store.approvals.get(id)));
  return records.filter((r): r is ApprovalRecord => r?.status === 'pending');
}
