/**
 * A run's channel permissions (src/policy/channel-rules.ts) as the worker applies them: the tools the
 * model is offered, why a withheld tool's call is refused (an observation the model reads), and the
 * channel's approvers for the gated calls of a pause.
 *
 * The channel's facts are recorded for the thread (for an hour) by the first run that learns them, so a
 * run, the workers that resume it and its sub-agents (which answer in the same thread) all use the same
 * facts. A failed lookup is not recorded: the run fails closed (no writes) and the next step asks again.
 */
import { z } from 'zod';
import type { AnyTool } from '../loop/tool-contract.js';
import {
  CHANNEL_KINDS,
  type ChannelFacts,
  type ChannelRule,
  type ChannelScope,
  channelScope,
  toolRefusal,
} from '../policy/channel-rules.js';
import type { ChannelFactsLookup } from '../slack/channel-facts.js';
import type { Store } from '../store/store.js';

/** The policy's channel rules and where the facts come from; absent on a runtime: no channel rules. */
export interface RunChannels {
  rules: readonly ChannelRule[];
  factsOf: ChannelFactsLookup;
}

const RECORD_SECONDS = 3_600;

const recorded = z.strictObject({ id: z.string(), name: z.string().optional(), kind: z.enum(CHANNEL_KINDS) });

/** The refusal code of a call the channel does not allow; the model reads it, people never see it. */
const CHANNEL_NOT_ALLOWED = 'channel_not_allowed';

interface ThreadRef {
  teamId?: string;
  channelId: string;
  threadTs: string;
}

/** The facts the thread's runs use: as recorded, else looked up (and recorded when Slack answered). */
export async function threadChannelFacts(
  store: Pick<Store, 'context'>,
  channels: RunChannels,
  thread: ThreadRef,
): Promise<ChannelFacts> {
  const { redis, keys } = store.context;
  const key = keys.thread(thread.teamId ?? '', thread.channelId, thread.threadTs).channel;
  const read = async () => {
    const text = await redis.get(key);
    if (text === null) return null;
    const parsed = recorded.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  };
  const kept = await read();
  if (kept) return kept;
  const facts = await channels.factsOf(thread.channelId);
  if (facts.kind === null) return facts;
  await redis.set(key, JSON.stringify(facts), 'EX', RECORD_SECONDS, 'NX');
  // Another run of the thread may have recorded first: everyone uses the recorded facts.
  return (await read()) ?? facts;
}

/** The run's channel scope, or null when the policy has no channel rules. */
export async function runChannelScope(
  rt: { store: Pick<Store, 'context'>; channels?: RunChannels },
  thread: ThreadRef,
): Promise<ChannelScope | null> {
  if (!rt.channels || rt.channels.rules.length === 0) return null;
  return channelScope(rt.channels.rules, await threadChannelFacts(rt.store, rt.channels, thread));
}

/** The tools offered in `scope`, and why each withheld one is refused when the model calls it anyway. */
export function channelTools(
  tools: ReadonlyMap<string, AnyTool>,
  scope: ChannelScope | null,
): {
  tools: ReadonlyMap<string, AnyTool>;
  withheld?: (tool: string) => { code: string; message: string } | null;
} {
  if (scope === null) return { tools };
  const refusals = new Map<string, string>();
  for (const [name, tool] of tools) {
    const why = toolRefusal(scope, name, tool.effect);
    if (why !== null) refusals.set(name, why);
  }
  if (refusals.size === 0) return { tools };
  return {
    tools: new Map([...tools].filter(([name]) => !refusals.has(name))),
    withheld: (tool) => {
      const why = refusals.get(tool);
      return why === undefined
        ? null
        : {
            code: CHANNEL_NOT_ALLOWED,
            message: `${why} (${scope.label}). Do not call it again in this run.`,
          };
    },
  };
}
