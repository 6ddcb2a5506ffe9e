import type { GroupMembers } from '../approvers/groups.js';
import type { OncallRoster } from '../approvers/oncall/roster-port.js';
import type { Policy } from '../config/policy.js';
import type { Logger } from '../log/logger.js';
import type { Clock } from '../loop/ports.js';
import type { Metrics } from '../metrics/metrics.js';
import type { RunsQueue } from '../queue/index.js';
import type { ChannelFactsLookup } from '../slack/channel-facts.js';
import type { Store } from '../store/index.js';
import type { RunTracer } from '../telemetry/run-tracer.js';
import type { Background } from './background.js';
import type { JobBatcher } from './job-batcher.js';
import type { BotSlack } from './slack-calls.js';

/** What every handler of the bot works with; built once by createBotApp. */
export interface BotContext {
  policy: Policy;
  store: Store;
  queue: RunsQueue;
  /** Start jobs, added in batches under a burst. */
  starts: JobBatcher;
  slack: BotSlack;
  groups: GroupMembers;
  /** Channels' names and kinds for per-channel permissions at clicks (conversations.info, cached). */
  channelFacts?: ChannelFactsLookup;
  /** Who is on call now for on-call approvers (cached in Redis, shared with the workers). */
  oncall?: OncallRoster;
  clock: Clock;
  logger: Logger;
  background: Background;
  /** Waits between attempts to queue a resume job while Redis fails (start jobs: events.ts). */
  enqueueRetryDelaysMs: readonly number[];
  metrics?: Metrics;
  /** OpenTelemetry traces (OTEL_EXPORTER_OTLP_* set); absent: tracing is off. */
  telemetry?: RunTracer;
}
