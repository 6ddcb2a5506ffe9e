/**
 * Which definition of an MCP tool each gated call was shown with: written when the approval card's
 * preview is made, read before the approved call executes, so a call approved under one definition never
 * runs under another (a resumed run in another worker, days later, after the server changed the tool).
 * Kept in Redis next to the run's own keys, for as long as finished runs are kept.
 */
import type { Store } from '../store/store.js';

export interface CallDefinitions {
  record(runId: string, toolCallId: string, hash: string): Promise<void>;
  /** The recorded hash, or null when none was recorded. */
  get(runId: string, toolCallId: string): Promise<string | null>;
}

export function redisCallDefinitions(store: Store): CallDefinitions {
  const { redis, keys, options } = store.context;
  // A paused run may wait up to its lifetime, then is kept for the retention period.
  const ttlMs = options.maxRunLifetimeMs + options.retentionMs;
  const key = (runId: string, toolCallId: string) => `${keys.run(runId).base}mcpdef:${toolCallId}`;
  return {
    async record(runId, toolCallId, hash) {
      await redis.set(key(runId, toolCallId), hash, 'PX', ttlMs);
    },
    get: (runId, toolCallId) => redis.get(key(runId, toolCallId)),
  };
}

/** For processes without Redis (tests of the tools alone, `loopgate mcp list`). */
export function memoryCallDefinitions(): CallDefinitions {
  const seen = new Map<string, string>();
  return {
    async record(runId, toolCallId, hash) {
      seen.set(`${runId}\u0000${toolCallId}`, hash);
    },
    async get(runId, toolCallId) {
      return seen.get(`${runId}\u0000${toolCallId}`) ?? null;
    },
  };
}
