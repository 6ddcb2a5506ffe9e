/**
 * Queue layout: ONE BullMQ queue, `loopgate-runs`, whose jobs are told apart by name (`start`, `resume`,
 * `cancel`, `expire`, the approval timers `remind`, `escalate` and `oncall_watch`, for sub-agents `child_start`,
 * `child_end`, and for asks for more budget `budget_resume`, `budget_expire`). One queue means one Worker per process, one set of metrics and one place to look;
 * the kinds share the same resource (a run and its lease) and the same retry policy, so separate
 * queues would buy nothing. Job ids are prefixed by kind (job-ids.ts), so they never collide.
 */
export const RUNS_QUEUE = 'loopgate-runs';

export const JOB_NAMES = [
  'start',
  'resume',
  'cancel',
  'expire',
  'remind',
  'escalate',
  'oncall_watch',
  'child_start',
  'child_end',
  'budget_resume',
  'budget_expire',
] as const;
export type JobName = (typeof JOB_NAMES)[number];

/** Default BullMQ prefix: braces make it a hash tag, so every key of the queue shares one Cluster slot. */
const DEFAULT_QUEUE_PREFIX = '{loopgate}';

const HASH_TAG = /\{[^{}]+\}/;

/** Checks a configured BullMQ prefix: it must carry a non-empty hash tag (`{...}`) for Redis Cluster. */
export function queuePrefix(prefix: string = DEFAULT_QUEUE_PREFIX): string {
  if (!HASH_TAG.test(prefix) || prefix.includes(':')) {
    throw new TypeError(
      `queue prefix ${JSON.stringify(prefix)} needs a hash tag such as {loopgate} and no ':'`,
    );
  }
  return prefix;
}
