import type { StoreContext } from '../context.js';

/** How long an open stream is remembered for its run's successor (streams live minutes, runs hours). */
const OPEN_STREAM_TTL_MS = 24 * 3_600_000;

export interface OpenStream {
  channel: string;
  ts: string;
}

/**
 * What the workers remember of Slack's agent surfaces, across processes:
 *
 *   <p>:surfaces:refused:<teamId>     string  the error code a workspace refused the methods with;
 *                                             expires, so a workspace that enabled them is tried again
 *   <p>:surfaces:streams:{<runId>}    hash    ts -> channel of each stream a job started and did not stop
 *                                             yet: a job that died mid-stream leaves it to its successor
 *
 * Each command names one key (Cluster-safe); the streams key carries the run's hash tag.
 */
export class SurfaceMemory {
  constructor(private readonly ctx: StoreContext) {}

  private refusedKey(teamId: string): string {
    return `${this.ctx.keys.prefix}:surfaces:refused:${teamId.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  }

  private streamsKey(runId: string): string {
    return `${this.ctx.keys.prefix}:surfaces:streams:{${runId}}`;
  }

  /** The code the workspace refused with, while remembered; null otherwise. */
  async refusal(teamId: string): Promise<string | null> {
    return this.ctx.redis.get(this.refusedKey(teamId));
  }

  /** Remembers a refusal for `ttlMs`; true only for the first worker to record it (it logs it). */
  async refuse(teamId: string, code: string, ttlMs: number): Promise<boolean> {
    return (await this.ctx.redis.set(this.refusedKey(teamId), code, 'PX', ttlMs, 'NX')) === 'OK';
  }

  async streamStarted(runId: string, stream: OpenStream): Promise<void> {
    const key = this.streamsKey(runId);
    await this.ctx.redis.multi().hset(key, stream.ts, stream.channel).pexpire(key, OPEN_STREAM_TTL_MS).exec();
  }

  async streamStopped(runId: string, ts: string): Promise<void> {
    await this.ctx.redis.hdel(this.streamsKey(runId), ts);
  }

  /** Streams of the run that a job started and never stopped, oldest first. */
  async openStreams(runId: string): Promise<OpenStream[]> {
    const all = await this.ctx.redis.hgetall(this.streamsKey(runId));
    return Object.entries(all)
      .map(([ts, channel]) => ({ ts, channel }))
      .sort((a, b) => Number(a.ts) - Number(b.ts));
  }
}
