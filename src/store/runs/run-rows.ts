/**
 * Reads for listing runs (`loopgate runs`): one row per run from its header hash, and the run ids to
 * list, either from the channel/requester indexes or, without a scope, from a bounded SCAN over run
 * headers. Read-only: nothing here changes Redis. Used through RunIndex.
 */
import { z } from 'zod';
import type { StoreContext } from '../context.js';
import { isRunId } from '../ids.js';
import { primaries } from '../nodes.js';
import { slackContextSchema } from '../records.js';
import { runStatusSchema, stopReasonSchema } from './run-state-schema.js';

export interface RunRow {
  runId: string;
  status: z.infer<typeof runStatusSchema>;
  stopReason: z.infer<typeof stopReasonSchema> | null;
  step: number;
  requester: string;
  teamId: string;
  channelId: string;
  threadTs: string;
  question: string;
  createdAt: number;
  updatedAt: number;
  /** Model cost so far, US dollars. */
  costUsd: number;
  /** Sub-agents the run waits for (their child runs' ends), by agent name. */
  waitingOnAgents: string[];
}

export interface UnreadableRun {
  runId: string;
  problem: string;
}

const FIELDS = [
  'status',
  'step',
  'stopReason',
  'createdAt',
  'updatedAt',
  'slack',
  'state',
  'progress',
] as const;

const jsonText = z.string().transform((text, ctx) => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    ctx.addIssue({ code: 'custom', message: 'not JSON' });
    return z.NEVER;
  }
});

/** Only the parts of the header state a row shows; the full state is validated by `trace` (loadRun). */
const headerRow = z.object({
  status: runStatusSchema,
  step: z.coerce.number().int().nonnegative(),
  stopReason: z.preprocess((v) => (v === '' ? null : v), stopReasonSchema.nullable()),
  createdAt: z.coerce.number(),
  updatedAt: z.coerce.number(),
  slack: jsonText.pipe(slackContextSchema),
  state: jsonText.pipe(
    z.looseObject({ requester: z.looseObject({ userId: z.string() }), question: z.string() }),
  ),
  // A listing shows what it can: a header written without it (by hand, or by another tool) still lists.
  progress: z.preprocess(
    (v) => (v === '' ? undefined : v),
    jsonText
      .pipe(
        z.looseObject({
          usage: z.looseObject({ costUsd: z.number() }),
          turn: z
            .looseObject({ delegated: z.array(z.looseObject({ agent: z.string() })).optional() })
            .nullable(),
        }),
      )
      .optional(),
  ),
});

/** Rows of `runIds` in the given order; runs that are gone are left out, damaged ones reported. */
export async function readRunRows(
  ctx: StoreContext,
  runIds: readonly string[],
): Promise<{ rows: RunRow[]; unreadable: UnreadableRun[] }> {
  if (runIds.length === 0) return { rows: [], unreadable: [] };
  // One command per run, not a pipeline: on a Cluster the runs' headers are on different nodes.
  const replies = await Promise.all(
    runIds.map((runId) => ctx.redis.hmget(ctx.keys.run(runId).header, ...FIELDS)),
  );
  const rows: RunRow[] = [];
  const unreadable: UnreadableRun[] = [];
  replies.forEach((list, i) => {
    const runId = runIds[i] as string;
    if (list[0] === null || list[0] === undefined) return; // expired or never existed
    const parsed = headerRow.safeParse(Object.fromEntries(FIELDS.map((field, j) => [field, list[j] ?? ''])));
    if (!parsed.success) {
      unreadable.push({ runId, problem: z.prettifyError(parsed.error).replaceAll('\n', '; ') });
      return;
    }
    const { slack, state, progress, ...rest } = parsed.data;
    rows.push({
      runId,
      ...rest,
      requester: state.requester.userId,
      teamId: slack.teamId,
      channelId: slack.channelId,
      threadTs: slack.threadTs,
      question: state.question,
      costUsd: progress?.usage.costUsd ?? 0,
      waitingOnAgents: (progress?.turn?.delegated ?? []).map((call) => call.agent),
    });
  });
  return { rows, unreadable };
}

/** Which index: a channel's runs or a requester's. */
export type RunIndexScope =
  | { channel: { teamId: string; channelId: string } }
  | { user: { teamId: string; userId: string } };

/** The index key of a channel or a requester. */
export function indexKey(ctx: StoreContext, scope: RunIndexScope): string {
  return 'channel' in scope
    ? ctx.keys.channelIndex(scope.channel.teamId, scope.channel.channelId)
    : ctx.keys.userIndex(scope.user.teamId, scope.user.userId);
}

export interface ScannedRunIds {
  /** Newest first, at most `limit`. */
  runIds: string[];
  /** Run headers examined. */
  examined: number;
  /** False when the scan stopped at `maxHeaders` before seeing every run. */
  complete: boolean;
}

const SCAN_BATCH = 1_000;
const READ_BATCH = 500;

/**
 * The newest runs across every channel, by SCANning run header keys on every primary (a Cluster's
 * nodes one after the other). SCAN walks the whole keyspace, so it stops after `maxHeaders` headers;
 * `complete` says whether it saw them all.
 */
export async function scanRecentRunIds(
  ctx: StoreContext,
  limit: number,
  maxHeaders: number,
): Promise<ScannedRunIds> {
  const pattern = `${escapeGlob(ctx.keys.prefix)}:run:{*}:header`;
  const idOf = new RegExp(`^${escapeRegExp(ctx.keys.prefix)}:run:\\{(.+)\\}:header$`);
  // SCAN may return a key more than once: a set keeps each run once.
  const found = new Set<string>();
  let scannedAll = true;
  const nodes = primaries(ctx.redis);
  for (const [n, node] of nodes.entries()) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_BATCH);
      cursor = next;
      for (const key of keys) {
        const runId = idOf.exec(key)?.[1];
        if (runId !== undefined && isRunId(runId)) found.add(runId);
      }
    } while (cursor !== '0' && found.size < maxHeaders);
    if (cursor !== '0') scannedAll = false;
    if (found.size >= maxHeaders) {
      // The nodes not visited may hold more runs.
      if (n < nodes.length - 1) scannedAll = false;
      break;
    }
  }
  const examined = [...found].slice(0, maxHeaders);

  const created: Array<{ runId: string; at: number }> = [];
  for (let i = 0; i < examined.length; i += READ_BATCH) {
    const batch = examined.slice(i, i + READ_BATCH);
    const replies = await Promise.all(
      batch.map((runId) => ctx.redis.hget(ctx.keys.run(runId).header, 'createdAt')),
    );
    replies.forEach((value, j) => {
      if (typeof value === 'string') created.push({ runId: batch[j] as string, at: Number(value) });
    });
  }
  created.sort((a, b) => b.at - a.at || a.runId.localeCompare(b.runId));
  return {
    runIds: created.slice(0, limit).map((c) => c.runId),
    examined: examined.length,
    complete: scannedAll && found.size <= maxHeaders,
  };
}

/** Redis MATCH patterns treat `* ? [ ] \` specially. */
const escapeGlob = (text: string) => text.replace(/[*?[\]\\]/g, '\\$&');
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
