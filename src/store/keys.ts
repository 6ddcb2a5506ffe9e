import { isApprovalId, isRunId, runIdOf } from './ids.js';

/**
 * The Redis key scheme of the run store.
 *
 * BullMQ needs a prefix with a hash tag (`{loopgate}`) so each queue's keys share one Cluster slot. Run
 * keys must NOT share that slot (all runs would land on one node), so the store strips the braces from
 * the configured prefix and gives each run its own tag instead:
 *
 *   <p>:run:{<runId>}:header            hash   run header (state without messages/evidence, counters, fence)
 *   <p>:run:{<runId>}:messages          list   one JSON message per element, only ever RPUSHed
 *   <p>:run:{<runId>}:evidence          list   one JSON evidence record per element, only ever RPUSHed
 *   <p>:run:{<runId>}:trace             list   trace entries, trimmed to a maximum length
 *   <p>:run:{<runId>}:lease             hash   {token, holder, nonce}, expires with the lease (PX)
 *   <p>:run:{<runId>}:approvals         set    approval ids of the run
 *   <p>:run:{<runId>}:approval:<id>     hash   one approval record
 *   <p>:run:{<runId>}:ledger:<id>       hash   execution ledger of one approved call
 *
 * Everything of one run hashes to one slot, so the Lua scripts may touch all of it atomically. The
 * cross-run indexes are keys of their own (any slot) and are therefore written outside the scripts,
 * right after them; readers tolerate entries whose run or approval is gone:
 *
 *   <p>:idx:channel:<teamId>:<channelId>  zset   run ids by creation time
 *   <p>:idx:user:<teamId>:<userId>        zset   run ids by creation time
 *   <p>:idx:pending-approvals             zset   approval ids by expiry time
 *   <p>:audit                             stream decisions, capped with MAXLEN ~
 *
 * A Slack thread's memory shares the thread's own tag, so the thread scripts stay in one slot:
 *
 *   <p>:thread:{<team>-<channel>-<threadTs>}:history   list  the thread's questions and answers (JSON)
 *   <p>:thread:{<team>-<channel>-<threadTs>}:active    string the run now working in the thread
 *   <p>:thread:{<team>-<channel>-<threadTs>}:inbox     list  start jobs queued behind that run
 */
export interface RunKeys {
  header: string;
  messages: string;
  evidence: string;
  trace: string;
  lease: string;
  approvals: string;
  /** `<p>:run:{<runId>}:`: the Lua scripts append `approval:<id>` / `ledger:<id>` to it. */
  base: string;
}

export interface KeyScheme {
  /** The prefix of run keys: the configured prefix without braces. */
  readonly prefix: string;
  run(runId: string): RunKeys;
  approval(approvalId: string): string;
  ledger(approvalId: string): string;
  channelIndex(teamId: string, channelId: string): string;
  userIndex(teamId: string, userId: string): string;
  readonly pendingApprovals: string;
  readonly audit: string;
  thread(teamId: string, channelId: string, threadTs: string): ThreadKeys;
}

export interface ThreadKeys {
  history: string;
  active: string;
  inbox: string;
}

/** Removes hash-tag braces: `{loopgate}` -> `loopgate`, `app:{lg}` -> `app:lg`. */
export const stripHashTag = (prefix: string): string => prefix.replace(/[{}]/g, '');

/** Key scheme for a prefix such as `{loopgate}` or `loopgate` (both give `loopgate:run:{...}:...`). */
export function keyScheme(prefix: string): KeyScheme {
  const p = stripHashTag(prefix);
  if (p.length === 0) throw new TypeError('the store prefix must not be empty');
  const run = (runId: string): RunKeys => {
    if (!isRunId(runId)) throw new TypeError(`not a valid run id: ${JSON.stringify(runId)}`);
    const base = `${p}:run:{${runId}}:`;
    return {
      base,
      header: `${base}header`,
      messages: `${base}messages`,
      evidence: `${base}evidence`,
      trace: `${base}trace`,
      lease: `${base}lease`,
      approvals: `${base}approvals`,
    };
  };
  const approvalBase = (approvalId: string): string => {
    if (!isApprovalId(approvalId))
      throw new TypeError(`not a valid approval id: ${JSON.stringify(approvalId)}`);
    return run(runIdOf(approvalId)).base;
  };
  return {
    prefix: p,
    run,
    approval: (id) => `${approvalBase(id)}approval:${id}`,
    ledger: (id) => `${approvalBase(id)}ledger:${id}`,
    channelIndex: (teamId, channelId) => `${p}:idx:channel:${safePart(teamId)}:${safePart(channelId)}`,
    userIndex: (teamId, userId) => `${p}:idx:user:${safePart(teamId)}:${safePart(userId)}`,
    pendingApprovals: `${p}:idx:pending-approvals`,
    audit: `${p}:audit`,
    thread: (teamId, channelId, threadTs) => {
      const base = `${p}:thread:{${safePart(teamId)}-${safePart(channelId)}-${safePart(threadTs)}}:`;
      return { history: `${base}history`, active: `${base}active`, inbox: `${base}inbox` };
    },
  };
}

/** Slack ids are alphanumeric; refuse anything that could alter a key's hash tag or shape. */
function safePart(value: string): string {
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(value))
    throw new TypeError(`not a valid Slack id: ${JSON.stringify(value)}`);
  return value;
}
