import type { AgentRuntime } from '../agents/catalog.js';
import type { GroupMembers } from '../approvers/groups.js';
import type { OncallRoster } from '../approvers/oncall/roster-port.js';
import type { ExtendableStop } from '../loop/budget-asks.js';
import type { ModelPort } from '../loop/model-port.js';
import type { Clock } from '../loop/ports.js';
import type { RunLimits } from '../loop/run-limits.js';
import type { AnyTool, Logger } from '../loop/tool-contract.js';
import type { Metrics } from '../metrics/metrics.js';
import type { GateDecision } from '../policy/gate.js';
import type { RunsQueue } from '../queue/runs-queue.js';
import type { Notifier } from '../slack/notifier-port.js';
import type { AgentSurfaces } from '../slack/surfaces/agent-surfaces.js';
import type { Approvers } from '../store/records.js';
import type { Store } from '../store/store.js';
import type { RunTracer } from '../telemetry/run-tracer.js';
import type { CancelWatch } from './cancel-watch.js';
import type { RunChannels } from './channel-scope.js';
import type { RequesterSlots } from './requester-slots.js';

/** What the worker needs to know of the policy, so tests can pass it without a config file. */
export interface RunPolicy {
  /** Budgets and brakes fixed into each new run. */
  limits: RunLimits;
  approversFor(tool: string): Approvers;
  /**
   * The policy's rules on a gated call's arguments (src/policy/gate.ts): allow, deny, or ask whom. Absent:
   * every call asks `approversFor(tool)`, one of them, within `approvalTtlMs`.
   */
  gate?(tool: string, args: unknown): GateDecision;
  /**
   * Why a gated call of `tool` asked from `channelId` is in shadow mode (src/policy/shadow.ts), or null:
   * it runs as usual. Absent: no call is in shadow mode.
   */
  shadow?(tool: string, channelId: string): string | null;
  /** How long an approval card waits for a decision. */
  approvalTtlMs: number;
  /**
   * How often a card with on-call approvers looks again at who is on call: the roster's cache period
   * (`approvals.oncallCacheSeconds`). Absent: 60 s (DEFAULT_ONCALL_WATCH_MS).
   */
  oncallWatchMs?: number;
  /**
   * Asks for more budget (`budgets.extend`): how long a card waits, and who may answer one (Slack user
   * and group ids, as the policy names them now). Absent: 30 minutes, the requester.
   */
  budgetAsks?: {
    ttlMs: number;
    deciders(reason: ExtendableStop, requester: string): string[];
  };
  /** The same for every run of a channel (a prefix servers cache); the time goes in the question's note. */
  systemPrompt(channelId: string): string;
}

/** Everything a job handler uses; built once per worker process. */
export interface WorkerRuntime {
  store: Store;
  queue: RunsQueue;
  notifier: Notifier;
  model: ModelPort;
  tools: ReadonlyMap<string, AnyTool>;
  policy: RunPolicy;
  clock: Clock;
  logger: Logger;
  /** Names this process in leases, so a lease shows who holds it. */
  workerId: string;
  /** A run lease lasts this long unless renewed (renewed every third of it while a job works). */
  leaseTtlMs: number;
  /** True while the process shuts down: jobs hand their runs back at the next step boundary. */
  stopping: () => boolean;
  /** The requester's IANA time zone from Slack, when it can be known quickly (see slack/time-zones.ts). */
  timeZoneOf?: (userId: string) => Promise<string | undefined>;
  /** Caps the runs of one requester worked at once in this process; none: no cap. */
  requesterSlots?: RequesterSlots;
  /**
   * Slack user group members (usergroups.users.list, cached), to check that a grant's grantor is still an
   * approver of a call through a group; absent: only approvers named directly count for grants.
   */
  groups?: GroupMembers;
  /** Who is on call now for the policy's on-call sources (cached in Redis, shared with the bot). */
  oncall?: OncallRoster;
  /** Prometheus metrics of this process, when it serves them. */
  metrics?: Metrics;
  /**
   * A tool's description when it comes from outside loopgate (an MCP server's): kept in the run's trace
   * where a tool is first used, so people can read what the model was told about it.
   */
  untrustedToolText?: (tool: string) => string | undefined;
  /** Per-channel permissions (`channels.rules`, src/worker/channel-scope.ts); absent: none. */
  channels?: RunChannels;
  /** The sub-agents of the policy (`agents:`); absent: none. Their `ask_` tools are in `tools`. */
  agents?: AgentRuntime;
  /**
   * Slack's agent surfaces (sessions, streamed answers, the step timeline; SLACK_AGENT_SURFACES=auto);
   * absent: every run shows in the placeholder message.
   */
  surfaces?: AgentSurfaces;
  /**
   * Tells a job at once that its run was cancelled (the engine's `cancelSignal`); absent: a cancel is
   * seen at step boundaries only.
   */
  cancels?: CancelWatch;
  /** OpenTelemetry traces of runs (OTEL_EXPORTER_OTLP_* set); absent: tracing is off. */
  telemetry?: RunTracer;
  /** The permalink of a thread's first message (Slack's chat.getPermalink), for the trace. */
  threadPermalink?: (channelId: string, threadTs: string) => Promise<string | undefined>;
}
