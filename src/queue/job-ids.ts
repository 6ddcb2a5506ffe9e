import type { RunJob } from './job-data.js';

/**
 * Job ids make duplicates harmless: BullMQ ignores an add whose id exists (in any state, until the job
 * is removed). Ids are `<kind>-<key>`: never all digits (BullMQ reserves those) and never containing
 * ':' (BullMQ refuses it). The key is percent-encoded (`encodeURIComponent`), which removes ':' and
 * every other character outside `A-Za-z0-9-_.!~*'()` and keeps distinct keys distinct.
 */
const encode = (key: string): string => {
  if (key.length === 0) throw new TypeError('a job id key must not be empty');
  return encodeURIComponent(key);
};

/** One run per Slack event, whatever Slack retries. */
export const startJobId = (eventId: string): string => `start-${encode(eventId)}`;
/** One resume per decided approval, whatever clicks or deliveries repeat. */
export const resumeJobId = (approvalId: string): string => `resume-${encode(approvalId)}`;
/** One pending cancel per run. */
export const cancelJobId = (runId: string): string => `cancel-${encode(runId)}`;
/** One expiry timer per approval. */
export const expireJobId = (approvalId: string): string => `expire-${encode(approvalId)}`;

/** One reminder per approval and percentage. */
export const remindJobId = (approvalId: string, percent: number): string =>
  `remind-${encode(approvalId)}-${percent}`;
/** One escalation per approval. */
export const escalateJobId = (approvalId: string): string => `escalate-${encode(approvalId)}`;
/** One look at who is on call per approval and tick. */
export const oncallWatchJobId = (approvalId: string, tick: number): string =>
  `oncall-watch-${encode(approvalId)}.${tick}`;
/** One start per sub-agent run. */
const childStartJobId = (childRunId: string): string => `child-start-${encode(childRunId)}`;
/** One hand-over per ended sub-agent run, and one per safety check while it works. */
export const childEndJobId = (childRunId: string, watch?: number): string =>
  `child-end-${encode(childRunId)}${watch === undefined ? '' : `.w${watch}`}`;

/** One resume and one expiry timer per round of a run's ask for more budget. */
export const budgetJobId = (kind: 'resume' | 'expire', runId: string, round: number): string =>
  `budget-${kind}-${encode(runId)}.${round}`;

export function jobIdFor(job: RunJob): string {
  switch (job.name) {
    case 'start':
      return job.data.queuedBehind
        ? `${startJobId(job.data.eventId)}.after-${encode(job.data.queuedBehind)}`
        : startJobId(job.data.eventId);
    case 'resume':
      return resumeJobId(job.data.approvalId);
    case 'cancel':
      return cancelJobId(job.data.runId);
    case 'expire':
      return expireJobId(job.data.approvalId);
    case 'remind':
      return remindJobId(job.data.approvalId, job.data.percent);
    case 'escalate':
      return escalateJobId(job.data.approvalId);
    case 'oncall_watch':
      return oncallWatchJobId(job.data.approvalId, job.data.tick);
    case 'child_start':
      return childStartJobId(job.data.runId);
    case 'child_end':
      return childEndJobId(job.data.childRunId, job.data.watch);
    case 'budget_resume':
      return budgetJobId('resume', job.data.runId, job.data.round);
    case 'budget_expire':
      return budgetJobId('expire', job.data.runId, job.data.round);
  }
}
