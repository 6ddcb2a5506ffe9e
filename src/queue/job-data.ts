import { UnrecoverableError } from 'bullmq';
import { z } from 'zod';
import { isApprovalId, isRunId, runIdOf } from '../store/ids.js';
import { traceCarrierSchema } from '../telemetry/carrier.js';
import { JOB_NAMES, type JobName } from './names.js';

/** Job payloads carry `v` so a worker of another version refuses what it cannot read. */
const JOB_DATA_VERSION = 1 as const;

const runId = z.string().refine(isRunId, 'a run id ([A-Za-z0-9_-], not all digits)');
const approvalId = z.string().refine(isApprovalId, 'an approval id (<runId>.<hex>)');
const slackId = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'a Slack id');
const slackTs = z.string().regex(/^\d+\.\d+$/, 'a Slack ts such as 1767000000.000100');

/** A person asked for a run: an app mention, a DM, or a reply in a thread where the bot works. */
export const startJobSchema = z.strictObject({
  v: z.literal(JOB_DATA_VERSION),
  /** Slack's envelope `event_id`: the job id, so Slack's retries never start a second run. */
  eventId: z.string().min(1),
  teamId: slackId,
  channelId: slackId,
  /** The thread to answer in (the message's own ts when it starts a thread). */
  threadTs: slackTs,
  messageTs: slackTs,
  userId: slackId,
  text: z.string(),
  kind: z.enum(['mention', 'dm', 'thread_reply']),
  /** When the bot received the event (ms since the epoch). */
  receivedAt: z.number().int().nonnegative(),
  /**
   * Set when the message waited in its thread's inbox behind this run and is now started by the worker
   * (the original job already completed, so the re-added job needs an id of its own).
   */
  queuedBehind: z.string().refine(isRunId, 'a run id').optional(),
  /**
   * Asked in the agent pane: the conversation the person was looking at (Slack's thread context). The
   * run gets it as data, never as instructions.
   */
  viewing: z.strictObject({ channelId: slackId, teamId: slackId.optional() }).optional(),
  /** The bot's span of the event (when tracing is on): the run's trace starts there. */
  trace: traceCarrierSchema.optional(),
});

const belongsToRun = (data: { runId: string; approvalId: string }) => runIdOf(data.approvalId) === data.runId;

/** An approval was decided: continue the run. */
const resumeJobSchema = z
  .strictObject({
    v: z.literal(JOB_DATA_VERSION),
    runId,
    approvalId,
    /** The bot's span of the decision (when tracing is on): the resumed stretch links to it. */
    trace: traceCarrierSchema.optional(),
  })
  .refine(belongsToRun, 'approvalId must belong to runId');

/** Someone asked to cancel the run. */
const cancelJobSchema = z.strictObject({
  v: z.literal(JOB_DATA_VERSION),
  runId,
  /** Slack user id of who cancelled. */
  by: slackId,
});

/** An approval's expiry time came (a delayed job: the durable timer). */
const expireJobSchema = z
  .strictObject({ v: z.literal(JOB_DATA_VERSION), runId, approvalId })
  .refine(belongsToRun, 'approvalId must belong to runId');

/** A reminder is due in an approval's thread, at `percent` of its time. */
const remindJobSchema = z
  .strictObject({
    v: z.literal(JOB_DATA_VERSION),
    runId,
    approvalId,
    percent: z.number().int().min(1).max(99),
  })
  .refine(belongsToRun, 'approvalId must belong to runId');

/** An approval nobody decided in time gets its escalation approvers. */
const escalateJobSchema = z
  .strictObject({ v: z.literal(JOB_DATA_VERSION), runId, approvalId })
  .refine(belongsToRun, 'approvalId must belong to runId');
/**
 * A pending approval with on-call approvers looks again at who is on call (every cache period) and redraws
 * its card when that changed. `shown` fingerprints the on-call the card shows; absent before the first look.
 */
const oncallWatchJobSchema = z
  .strictObject({
    v: z.literal(JOB_DATA_VERSION),
    runId,
    approvalId,
    tick: z.number().int().min(1).max(1_000_000),
    shown: z
      .string()
      .regex(/^[0-9a-f]{16}$/)
      .optional(),
  })
  .refine(belongsToRun, 'approvalId must belong to runId');

/** A sub-agent's run was created by its parent: work on it. */
const childStartJobSchema = z.strictObject({ v: z.literal(JOB_DATA_VERSION), runId });

/**
 * A sub-agent's run ended (or, with `watch`, a delayed check while it works): the parent applies the
 * ends of its children that are in the store. Harmless when repeated: nothing is applied twice.
 */
const childEndJobSchema = z.strictObject({
  v: z.literal(JOB_DATA_VERSION),
  /** The parent run. */
  runId,
  childRunId: runId,
  /** Set on the safety checks scheduled while the child works: their number, 1, 2, ... */
  watch: z.number().int().min(1).max(1_000_000).optional(),
});

/**
 * A run's ask for more budget of round `round` was answered (`budget_resume`), or its time is up
 * (`budget_expire`, a delayed job: the durable timer).
 */
const budgetJobSchema = z.strictObject({
  v: z.literal(JOB_DATA_VERSION),
  runId,
  round: z.number().int().min(1).max(1_000),
});

export const jobSchemas = {
  start: startJobSchema,
  resume: resumeJobSchema,
  cancel: cancelJobSchema,
  expire: expireJobSchema,
  remind: remindJobSchema,
  escalate: escalateJobSchema,
  oncall_watch: oncallWatchJobSchema,
  child_start: childStartJobSchema,
  child_end: childEndJobSchema,
  budget_resume: budgetJobSchema,
  budget_expire: budgetJobSchema,
} as const;

export type StartJobData = z.infer<typeof startJobSchema>;
export type ResumeJobData = z.infer<typeof resumeJobSchema>;
export type CancelJobData = z.infer<typeof cancelJobSchema>;
export type ExpireJobData = z.infer<typeof expireJobSchema>;
export type RemindJobData = z.infer<typeof remindJobSchema>;
export type EscalateJobData = z.infer<typeof escalateJobSchema>;
export type OncallWatchJobData = z.infer<typeof oncallWatchJobSchema>;
type ChildStartJobData = z.infer<typeof childStartJobSchema>;
export type ChildEndJobData = z.infer<typeof childEndJobSchema>;
export type BudgetJobData = z.infer<typeof budgetJobSchema>;
export type JobData<N extends JobName> = z.infer<(typeof jobSchemas)[N]>;

/** A job of the runs queue, discriminated by name. */
export type RunJob =
  | { name: 'start'; data: StartJobData }
  | { name: 'resume'; data: ResumeJobData }
  | { name: 'cancel'; data: CancelJobData }
  | { name: 'expire'; data: ExpireJobData }
  | { name: 'remind'; data: RemindJobData }
  | { name: 'escalate'; data: EscalateJobData }
  | { name: 'oncall_watch'; data: OncallWatchJobData }
  | { name: 'child_start'; data: ChildStartJobData }
  | { name: 'child_end'; data: ChildEndJobData }
  | { name: 'budget_resume' | 'budget_expire'; data: BudgetJobData };

const isJobName = (name: string): name is JobName => (JOB_NAMES as readonly string[]).includes(name);

/**
 * Validates a job taken from the queue. Bad data can never succeed, so it throws BullMQ's
 * `UnrecoverableError` (the job fails at once, without retries) with a message naming the problem.
 */
export function parseJobData(name: string, data: unknown): RunJob {
  if (!isJobName(name)) {
    throw new UnrecoverableError(
      `unknown job name ${JSON.stringify(name)} (expected ${JOB_NAMES.join(', ')})`,
    );
  }
  if (typeof data === 'object' && data !== null && 'v' in data && data.v !== JOB_DATA_VERSION) {
    throw new UnrecoverableError(
      `${name} job data has version ${JSON.stringify(data.v)}; this worker reads version ${JOB_DATA_VERSION}`,
    );
  }
  switch (name) {
    case 'start':
      return { name, data: check(name, startJobSchema, data) };
    case 'resume':
      return { name, data: check(name, resumeJobSchema, data) };
    case 'cancel':
      return { name, data: check(name, cancelJobSchema, data) };
    case 'expire':
      return { name, data: check(name, expireJobSchema, data) };
    case 'remind':
      return { name, data: check(name, remindJobSchema, data) };
    case 'escalate':
      return { name, data: check(name, escalateJobSchema, data) };
    case 'oncall_watch':
      return { name, data: check(name, oncallWatchJobSchema, data) };
    case 'child_start':
      return { name, data: check(name, childStartJobSchema, data) };
    case 'child_end':
      return { name, data: check(name, childEndJobSchema, data) };
    case 'budget_resume':
    case 'budget_expire':
      return { name, data: check(name, budgetJobSchema, data) };
  }
}

function check<T>(name: JobName, schema: z.ZodType<T>, data: unknown): T {
  const parsed = schema.safeParse(data);
  if (!parsed.success) throw new UnrecoverableError(`bad ${name} job data: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
