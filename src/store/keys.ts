import { isApprovalId, isRunId, runIdOf } from './ids.js';

/**
 * Version of the layout below. Layout 1 (one header JSON, evidence and trace as objects) was never
 * deployed; loadRun refuses runs stored in any other layout rather than misread them.
 */
export const STORE_LAYOUT = 2;

/**
 * The Redis key scheme of the run store, and what each key holds (store layout 2, `STORE_LAYOUT`).
 *
 * BullMQ needs a prefix with a hash tag (`{loopgate}`) so each queue's keys share one Cluster slot. Run
 * keys must NOT share that slot (all runs would land on one node), so the store strips the braces from
 * the configured prefix and gives each run its own tag instead:
 *
 *   <p>:run:{<runId>}:header            hash   the run header (fields below)
 *   <p>:run:{<runId>}:messages          list   one JSON message per element, only ever RPUSHed
 *   <p>:run:{<runId>}:evidence          list   one evidence row per element, only ever RPUSHed
 *   <p>:run:{<runId>}:trace             list   trace entries (rows or objects), trimmed to a maximum length
 *   <p>:run:{<runId>}:compactions       list   one JSON compaction record per element, only ever RPUSHed
 *   <p>:run:{<runId>}:results           hash   long tool results kept for read_result: handle -> text,
 *                                              and `#bytes`, the bytes of all of them (keepResult-3.lua)
 *   <p>:run:{<runId>}:feedback          hash   feedback on the run's answer: user id -> JSON record
 *                                              (feedback/feedback-store.ts; first click per person wins)
 *   <p>:run:{<runId>}:lease             hash   {token, holder, nonce}, expires with the lease (PX)
 *   <p>:run:{<runId>}:approvals         set    approval ids of the run
 *   <p>:run:{<runId>}:approval:<id>     hash   one approval record
 *   <p>:run:{<runId>}:ledger:<id>       hash   execution ledger of one approved call
 *   <p>:run:{<runId>}:budget-ask        hash   the run's latest ask for more budget (budget/budget-ask-store.ts)
 *
 * Header fields (runs/header-codec.ts assembles the RunState header from them; runId is the key's):
 *   v            RunState version (RUN_STATE_VERSION)       layout       STORE_LAYOUT
 *   state        JSON {requester, question, limits}: written once by createRun, never rewritten (the
 *                name is layout 1's; src/store/runs/run-rows.ts reads requester and question from it)
 *   progress     JSON {usage, turn, actions, rejected, brakes, answerRetries, answer, stopMessage,
 *                context, subagents, budgetAsk, extensions}:
 *                rewritten by every saveStep (the only part of the header a step rewrites besides
 *                the small fields below)
 *   status, step, stopReason ('' for none), createdAt, updatedAt     the RunState's own scalars
 *   pause        approval ids of the gated calls pending in `state`, space-separated ('' for none):
 *                loadRun reads those approvals in the same MULTI (pauseApprovals-1.lua)
 *   messages, evidence, compactions   how many elements the lists have (saveStep's compare-and-append
 *                base; `compactions` absent: 0)
 *   slack        JSON Slack context       placeholderTs, answerTs   Slack message ts, once known
 *   fence        last fencing token issued            cancel   JSON {by, at} once a cancel was asked
 *   finishedAt   set when saveStep stores a finished state
 *   createNonce, saveNonce   nonces of the last createRun / saveStep (a resend is recognised)
 *
 * Rows: evidence and the trace entries the worker records are stored as JSON arrays of their values in
 * a fixed field order instead of JSON objects (rows.ts). Evidence (runs/evidence-codec.ts) is
 * `[toolCallId, tool, kind, ok, summary, at]`, or just `[messageIndex, at - createdAt]` for a
 * successful result that its tool message gives back whole (the summary is read off the message's
 * text, runs/evidence-summary.ts, and checked to be equal before it is left out). Trace entries saved with
 * a step are rows `[tag, at - createdAt, ...fields]` per kind (runs/trace-codec.ts); any other trace entry
 * (and those appended by appendTrace) is stored as its object.
 * Messages are stored as their JSON objects.
 *
 * Everything of one run hashes to one slot, so the Lua scripts may touch all of it atomically (they
 * build approval and ledger keys from `base`, the run's own tag, so even those they do not declare are
 * in the slot of their KEYS). The cross-run keys below carry no tag: Redis Cluster hashes each one
 * whole, so the per-channel and per-user indexes and the rate counters spread over the cluster, while
 * the pending-approvals index and the audit stream are one key each (readers need one order across
 * all runs; their load is a few commands per decision). Every command on them names one key, and they
 * are written outside the scripts, right after them (or beside them); readers tolerate entries whose
 * run or approval is gone:
 *
 *   <p>:idx:channel:<teamId>:<channelId>  zset   run ids by creation time
 *   <p>:idx:user:<teamId>:<userId>        zset   run ids by creation time
 *   <p>:idx:pending-approvals             zset   approval ids by expiry time
 *   <p>:audit                             stream decisions, capped with MAXLEN ~
 *   <p>:idx:feedback                      zset   `<runId> <userId>` by time of the click (export)
 *   <p>:workers:no-metrics                zset   workers whose METRICS_PORT was taken, by last notice
 *   <p>:rate:<user|thread>:<ids>:<window>:events  zset  event ids counted in one minute (expires)
 *
 * A Slack rate budget (src/store/budget/slack-budget-store.ts) shares its own tag, so its scripts stay in one
 * slot; `<bucket>` is the workspace, the method and, for posts, the channel:
 *
 *   <p>:slack-budget:{<bucket>}:tat     string the GCRA's next arrival time (ms, Redis clock)
 *   <p>:slack-budget:{<bucket>}:queue   zset   callers waiting in line, by rank
 *   <p>:slack-budget:{<bucket>}:seen    zset   when each waiting caller last asked (dead ones leave)
 *
 * A Slack thread's memory shares the thread's own tag, so the thread scripts stay in one slot:
 *
 *   <p>:thread:{<team>-<channel>-<threadTs>}:history   list  the thread's questions and answers (JSON)
 *   <p>:thread:{<team>-<channel>-<threadTs>}:active    string the run now working in the thread
 *   <p>:thread:{<team>-<channel>-<threadTs>}:inbox     list  start jobs queued behind that run
 *   <p>:thread:{<team>-<channel>-<threadTs>}:grants    hash  grants in force in the thread (JSON by id)
 *   <p>:thread:{<team>-<channel>-<threadTs>}:channel   string the channel's facts its runs use (JSON, 1 h)
 *   <p>:thread:{<team>-<channel>-<threadTs>}:pane      hash  an agent pane thread: `viewing` (JSON: the
 *                                                       channel the person looks at), `titled` (1 once
 *                                                       its title was set)
 *
 * Pub/sub channel (no key: PUBLISH reaches every node of a Cluster), a hint only:
 *   <p>:cancels   run ids published right after a run's `cancel` field was written; workers use it to
 *                 abort a run's model request at once, after reading that field themselves
 *
 * Grant indexes (zsets of `<team>/<channel>/<threadTs>/<grantId>` by expiry, single-key commands):
 *   <p>:idx:grants:user:<teamId>:<userId>   <p>:idx:grants:channel:<teamId>:<channelId>
 *
 * Production Redis (a recommendation; nothing here sets Redis configuration): with the defaults, a
 * header of fields over 64 bytes is a hashtable, and every list node is kept uncompressed.
 *   list-compress-depth 1          LZF-compresses list nodes other than the first and last (8 KB
 *                                  each): a 50-step run with 1 KB results keeps its messages in about
 *                                  half the bytes; loads and saves measured no slower
 *   hash-max-listpack-value 4096   keeps run headers and approval records as listpacks (about 1 KB
 *                                  less per run header)
 * Measured with bench/durable-run.ts's runs on a private Redis 7.0 (MEMORY USAGE over a run's keys
 * against its messages' JSON): 50 no-op steps 1.70x -> 1.59x, 50 steps of 1 KB results
 * 1.20x -> 0.65x, 100 steps of 1 KB results 1.16x -> 0.46x.
 */
export interface RunKeys {
  header: string;
  messages: string;
  evidence: string;
  trace: string;
  lease: string;
  approvals: string;
  compactions: string;
  results: string;
  feedback: string;
  budgetAsk: string;
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
  /** zset of `<runId> <userId>` by time of the feedback click. */
  readonly feedbackIndex: string;
  /** Pub/sub channel announcing cancelled run ids (a hint: the run header's `cancel` field is the truth). */
  readonly cancels: string;
  /** zset of workers serving no metrics (their METRICS_PORT was taken), by when they last said so. */
  readonly workersWithoutMetrics: string;
  thread(teamId: string, channelId: string, threadTs: string): ThreadKeys;
  /** The keys of one Slack rate budget: `parts` are the workspace, the method and maybe the channel. */
  slackBudget(parts: readonly string[]): { tat: string; queue: string; seen: string };
  /** A fixed-window counter of inbound messages: `parts` name the user or thread, `window` its start. */
  rate(kind: 'user' | 'thread', parts: readonly string[], window: number): string;
}

export interface ThreadKeys {
  history: string;
  active: string;
  inbox: string;
  /** hash   grants in force in the thread, by grant id (src/store/grants/grant-store.ts) */
  grants: string;
  /** hash   an agent pane thread's context (`viewing`) and whether its title was set (`titled`) */
  pane: string;
  /** string the channel's facts the thread's runs use (src/worker/channel-scope.ts; JSON, expires) */
  channel: string;
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
      compactions: `${base}compactions`,
      results: `${base}results`,
      feedback: `${base}feedback`,
      budgetAsk: `${base}budget-ask`,
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
    cancels: `${p}:cancels`,
    workersWithoutMetrics: `${p}:workers:no-metrics`,
    feedbackIndex: `${p}:idx:feedback`,
    slackBudget: (parts) => {
      const base = `${p}:slack-budget:{${parts.map(safePart).join('-')}}:`;
      return { tat: `${base}tat`, queue: `${base}queue`, seen: `${base}seen` };
    },
    rate: (kind, parts, window) => `${p}:rate:${kind}:${parts.map(safePart).join('-')}:${window}:events`,
    thread: (teamId, channelId, threadTs) => {
      const base = `${p}:thread:{${safePart(teamId)}-${safePart(channelId)}-${safePart(threadTs)}}:`;
      return {
        history: `${base}history`,
        active: `${base}active`,
        inbox: `${base}inbox`,
        grants: `${base}grants`,
        pane: `${base}pane`,
        channel: `${base}channel`,
      };
    },
  };
}

/** Slack ids are alphanumeric; refuse anything that could alter a key's hash tag or shape. */
function safePart(value: string): string {
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(value))
    throw new TypeError(`not a valid Slack id: ${JSON.stringify(value)}`);
  return value;
}
