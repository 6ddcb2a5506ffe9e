import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';
import { askTool, askToolName } from '../agents/ask-tool.js';
import { type AgentDefinition, agentDefinitions, DEFAULT_WATCH_MS } from '../agents/catalog.js';
import { createGroupMembers } from '../approvers/groups.js';
import { processRoster } from '../approvers/oncall/build.js';
import { unknownAgentTools } from '../config/agents.js';
import { budgetDeciders, deciderIds } from '../config/budget-extend.js';
import type { Env } from '../config/env.js';
import { ConfigError } from '../config/errors.js';
import { modelChain } from '../config/model-knobs.js';
import type { Policy } from '../config/policy.js';
import { approversFor, limitsFromPolicy } from '../config/policy-limits.js';
import { shadowReason } from '../config/shadow-mode.js';
import { createBufferedFetch } from '../http/buffered-fetch.js';
import type { Logger } from '../log/logger.js';
import type { ModelPort } from '../loop/model-port.js';
import type { Clock } from '../loop/ports.js';
import type { AnyTool } from '../loop/tool-contract.js';
import { redisCallDefinitions } from '../mcp/call-definitions.js';
import { McpSource } from '../mcp/mcp-source.js';
import { redisRunCancelled } from '../mcp/run-cancelled.js';
import { slackBudgetMetrics } from '../metrics/metrics.js';
import { channelToolWarnings } from '../policy/channel-rules.js';
import { decideGate } from '../policy/gate.js';
import { ruleSchemaWarnings } from '../policy/rule-types.js';
import type { RunsQueue } from '../queue/runs-queue.js';
import { createChannelFacts } from '../slack/channel-facts.js';
import { SlackNotifier } from '../slack/notifier.js';
import { shareRetryAfter } from '../slack/rate/share-retry-after.js';
import { SlackBudget, SlackBudgetExhausted } from '../slack/rate/slack-budget.js';
import { AgentSurfaces, webSurfaceCalls } from '../slack/surfaces/agent-surfaces.js';
import { createTimeZoneLookup } from '../slack/time-zones.js';
import { createSlackWebClient } from '../slack/web-client.js';
import type { Store } from '../store/store.js';
import { SurfaceMemory } from '../store/threads/surface-memory.js';
import type { RunTracer } from '../telemetry/run-tracer.js';
import type { SlackPoster } from '../tools/ports.js';
import { type Redact, withRedactedFailures } from '../tools/redacted-failures.js';
import { buildTools } from '../tools/registry.js';
import { ruleArgSchemas } from '../tools/rule-schemas.js';
import { buildSystemPrompt } from '../tools/system-prompt.js';
import type { RunChannels } from './channel-scope.js';
import type { RunPolicy, WorkerRuntime } from './runtime.js';

const groupMembersReply = z.looseObject({ users: z.array(z.string()) });

/** What the worker's runtime is built from; metrics, requester slots and the cancel watch go in as given. */
interface RuntimeParts extends Pick<WorkerRuntime, 'metrics' | 'requesterSlots' | 'cancels'> {
  env: Env<'worker'>;
  policy: Policy;
  logger: Logger;
  store: Store;
  queue: RunsQueue;
  /** True once the process is shutting down. */
  stopping: () => boolean;
  /** Replaces configured secret values in tool failures; default none replaced. */
  redact?: Redact;
  /** The run tracer when traces are exported (its Slack calls get spans). */
  telemetry?: RunTracer | null;
}

/** Slack's Web API client and the rate budget every Slack call of the worker waits in line at. */
interface SlackAccess {
  client: ReturnType<typeof createSlackWebClient>;
  budget: SlackBudget;
}

/**
 * Wires the worker's ports from the environment and the policy: model, tools (built-in, custom and those
 * of the MCP servers, swapped for a new registry whenever a server's list changes), Slack, policy.
 * @throws ConfigError when a tool cannot be built or an MCP tool takes another tool's name.
 */
export async function buildWorkerRuntime(parts: RuntimeParts): Promise<WorkerRuntime & { mcp: McpSource }> {
  const { env, policy, logger, store, queue, stopping, redact = (text) => text, telemetry = null } = parts;
  // One kept-alive HTTP client for the model and Slack: under load the built-in fetch cost most CPU.
  const fetch = createBufferedFetch();
  const slack = slackAccess(parts, fetch, telemetry);
  const own = await buildTools(policy, { env: process.env, slack: slackPoster(slack) });
  const mcp = await startMcp(parts, own);
  const agents = agentDefinitions(policy.agents);
  const asks = [...agents.values()].map((agent) => askTool(agent));
  await refuseUnknownAgentTools(policy, own, mcp);
  warnUnappliableRules(policy, logger, own, mcp);
  const registry = () =>
    withRedactedFailures(new Map([...own, ...mcp.tools(), ...asks.map((t) => [t.name, t] as const)]), redact);
  const model = modelChain(env, policy, logger, { fetch });
  const clock = { now: () => Date.now() };
  const runtime: WorkerRuntime & { mcp: McpSource } = {
    store,
    queue,
    ...slackDisplay(parts, slack),
    model,
    tools: registry(),
    // Per-channel permissions: the channel's name and kind, cached as long as who is on call.
    ...(policy.channels.rules.length > 0 && { channels: runChannels(parts, slack, clock) }),
    ...(agents.size > 0
      ? {
          agents: {
            definitions: agents,
            modelOf: agentModels(parts, fetch, model),
            watchMs: DEFAULT_WATCH_MS,
          },
        }
      : {}),
    mcp,
    untrustedToolText: (tool) => mcp.tools().get(tool)?.description,
    policy: runPolicy(parts, clock, () => [...runtime.tools.keys()]),
    clock,
    logger,
    ...(telemetry ? { telemetry } : {}),
    ...slackLookups(parts, slack, clock),
    workerId: `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`,
    leaseTtlMs: env.WORKER_LOCK_MS,
    stopping,
    ...(parts.metrics ? { metrics: parts.metrics } : {}),
    ...(parts.requesterSlots ? { requesterSlots: parts.requesterSlots } : {}),
    ...(parts.cancels ? { cancels: parts.cancels } : {}),
  };
  // Jobs read `rt.tools` when they start: a changed list reaches the next job, never one mid-step.
  mcp.onChange(() => {
    runtime.tools = registry();
  });
  return runtime;
}

/** The Slack client and its rate budget, which counts its calls in the process's metrics. */
function slackAccess(
  { env, policy, logger, store, metrics }: RuntimeParts,
  fetch: typeof globalThis.fetch,
  telemetry: RunTracer | null,
): SlackAccess {
  const client = createSlackWebClient({
    token: env.SLACK_BOT_TOKEN,
    apiUrl: env.SLACK_API_URL,
    logger,
    fetch,
    tracer: telemetry,
  });
  const budget = new SlackBudget({
    store: store.slackBudget,
    logger,
    limits: policy.slack.rateLimits,
    metrics: slackBudgetMetrics(() => metrics),
  });
  shareRetryAfter(client, budget);
  return { client, budget };
}

/** How the notify tool posts: an approved call's message, with its permalink when Slack gives one. */
function slackPoster({ client, budget }: SlackAccess): SlackPoster {
  return {
    async postMessage(channel, text) {
      // An approved notify call: it waits in line like an answer.
      const posted = await budget.call({ method: 'chat.postMessage', channel, priority: 'answer' }, () =>
        client.chat.postMessage({ channel, text, unfurl_links: false }),
      );
      if (!posted.ts) throw new Error(`Slack did not return the message ts for ${channel}`);
      const link = await budget
        .call({ method: 'chat.getPermalink', priority: 'answer' }, () =>
          client.chat.getPermalink({ channel, message_ts: posted.ts as string }),
        )
        .catch(() => null);
      return { ts: posted.ts, ...(link?.permalink ? { permalink: link.permalink } : {}) };
    },
  };
}

/** The MCP servers' tools, started; none may take the name of one of the worker's own tools. */
async function startMcp(
  { policy, logger, store }: RuntimeParts,
  own: ReadonlyMap<string, AnyTool>,
): Promise<McpSource> {
  const mcp = new McpSource({
    settings: policy.mcp,
    env: process.env,
    logger,
    definitions: redisCallDefinitions(store),
    runCancelled: redisRunCancelled(store),
    reserved: new Set(own.keys()),
  });
  await mcp.start();
  const collisions = mcp.collisions();
  if (collisions.length > 0) {
    await mcp.close();
    throw new ConfigError(policy.source, collisions);
  }
  return mcp;
}

/** An agent naming a tool that neither the worker nor an MCP server has stops the start-up. */
async function refuseUnknownAgentTools(
  policy: Policy,
  own: ReadonlyMap<string, AnyTool>,
  mcp: McpSource,
): Promise<void> {
  const agentProblems = unknownAgentTools(
    policy.agents,
    new Set([...own.keys(), ...mcp.tools().keys()]),
    Object.keys(policy.mcp?.servers ?? {}),
  );
  if (agentProblems.length > 0) {
    await mcp.close();
    throw new ConfigError(policy.source, agentProblems);
  }
}

/** Rules that cannot apply as written to their tool's arguments run anyway (failing closed): say so. */
function warnUnappliableRules(
  policy: Policy,
  logger: Logger,
  own: ReadonlyMap<string, AnyTool>,
  mcp: McpSource,
): void {
  for (const warning of ruleSchemaWarnings(
    policy.rules,
    ruleArgSchemas(new Map([...own, ...mcp.tools()]), policy.tools.run_action?.actions),
  )) {
    logger.warn({ key: warning.key, problem: warning.problem }, 'policy rule cannot apply as written');
  }
  const names = [...own.keys(), ...mcp.tools().keys(), ...Object.keys(policy.agents).map(askToolName)];
  for (const warning of channelToolWarnings(
    policy.channels.rules,
    names,
    Object.keys(policy.mcp?.servers ?? {}),
  )) {
    logger.warn({ key: warning.key, problem: warning.problem }, 'channel rule names no tool');
  }
}

/** One model chain per model an agent names (the same server, key and fallbacks as the run's). */
function agentModels(
  { env, policy, logger }: RuntimeParts,
  fetch: typeof globalThis.fetch,
  model: ModelPort,
): (agent: AgentDefinition) => ModelPort {
  const chains = new Map<string, ModelPort>();
  return (agent) => {
    if (agent.model === undefined) return model;
    let port = chains.get(agent.model);
    if (!port) {
      port = modelChain(env, policy, logger, { fetch, primaryName: agent.model });
      chains.set(agent.model, port);
    }
    return port;
  };
}

/** Where runs show: the placeholder message, and Slack's agent surfaces when SLACK_AGENT_SURFACES=auto. */
function slackDisplay(
  { env, logger, store }: RuntimeParts,
  { client, budget }: SlackAccess,
): Pick<WorkerRuntime, 'notifier' | 'surfaces'> {
  return {
    notifier: new SlackNotifier({ client, logger, budget }),
    ...(env.SLACK_AGENT_SURFACES === 'auto' && {
      surfaces: new AgentSurfaces({
        calls: webSurfaceCalls(client, budget),
        memory: new SurfaceMemory(store.context),
        logger,
      }),
    }),
  };
}

/** The channel rules, with each channel's facts from Slack (failing closed when Slack does not say). */
function runChannels(
  { policy, logger }: RuntimeParts,
  { client, budget }: SlackAccess,
  clock: Clock,
): RunChannels {
  return {
    rules: policy.channels.rules,
    factsOf: createChannelFacts({
      info: (channel) =>
        budget.call({ method: 'conversations.info', priority: 'card' }, () =>
          client.conversations.info({ channel }),
        ),
      clock,
      ttlMs: policy.approvals.oncallCacheSeconds * 1_000,
      onFailure: (channel, err) =>
        logger.warn({ channel, err }, 'channel facts unknown: its channel rules fail closed (no writes)'),
    }),
  };
}

/** What the worker needs of the policy: limits, approvers, rules, shadow mode, budget asks, prompts. */
function runPolicy({ env, policy }: RuntimeParts, clock: Clock, toolNames: () => string[]): RunPolicy {
  return {
    limits: limitsFromPolicy(policy, env.OPENAI_MODEL),
    approversFor: (tool) => approversFor(policy, tool),
    gate: (tool, args) => decideGate(policy, tool, args, clock.now()),
    shadow: (tool, channelId) => shadowReason(policy, tool, channelId),
    approvalTtlMs: policy.approvals.expiresAfterMinutes * 60_000,
    oncallWatchMs: policy.approvals.oncallCacheSeconds * 1_000,
    budgetAsks: {
      ttlMs: (policy.budgets.extend?.expiresAfterMinutes ?? 30) * 60_000,
      deciders: (reason, requester) =>
        deciderIds(budgetDeciders(policy.budgets.extend, policy.approvals.approvers, reason, requester)),
    },
    systemPrompt: (channelId) =>
      buildSystemPrompt({ channelPrompt: policy.channels.prompt[channelId], toolNames: toolNames() }),
  };
}

/** What the worker asks Slack about people: who is on call, group members, time zones, thread links. */
function slackLookups(
  { policy, store, logger }: RuntimeParts,
  { client, budget }: SlackAccess,
  clock: Clock,
): Pick<WorkerRuntime, 'oncall' | 'groups' | 'timeZoneOf' | 'threadPermalink'> {
  return {
    // Who is on call now, for cards and for grants of on-call approvers (cached in Redis, shared).
    oncall: processRoster({
      policy,
      store,
      env: process.env,
      lookupByEmail: (email) =>
        budget.call({ method: 'users.lookupByEmail', priority: 'card' }, () =>
          client.users.lookupByEmail({ email }),
        ),
      logger,
    }),
    // Whether a grant's grantor is still an approver through a group (src/worker/approval-plan.ts).
    groups: createGroupMembers({
      lookup: async (usergroup) =>
        groupMembersReply.parse(
          await budget.call({ method: 'usergroups.users.list', priority: 'card' }, () =>
            client.usergroups.users.list({ usergroup }),
          ),
        ).users,
      clock,
    }),
    timeZoneOf: createTimeZoneLookup({
      // A nicety, not worth a place in line: with no slot free now, the run starts in UTC (not cached).
      usersInfo: async (user) => {
        if (!(await budget.tryNow({ method: 'users.info', priority: 'decoration' }, 1))) {
          throw new SlackBudgetExhausted('users.info', 0);
        }
        return client.users.info({ user });
      },
      clock,
      logger,
    }),
    // Asked only while tracing is on, once per job: the trace names the thread it belongs to.
    threadPermalink: (channel, ts) =>
      client.chat.getPermalink({ channel, message_ts: ts }).then(
        (link) => link.permalink,
        () => undefined,
      ),
  };
}
