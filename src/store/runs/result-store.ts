import type { KeptResult, ResultStore } from '../../loop/ports.js';
import type { StoreContext } from '../context.js';
import { replyCount } from '../decode.js';

/** keepResult-3's answer when the text would pass the run's bound. */
const RUN_FULL = -10;

/** Handles are made by the engine (src/loop/large-results.ts); `#bytes` is the hash's own field. */
const HANDLE = /^res_[A-Za-z0-9_-]{1,120}$/;

export interface KeepInput {
  runId: string;
  /** Fencing token of the caller's lease. */
  fence: number;
  handle: string;
  text: string;
  /** Most bytes all the run's kept results may take. */
  maxRunBytes: number;
}

/**
 * Long tool results kept with their run (keys.ts: `<p>:run:{<runId>}:results`), for read_result: one
 * hash per run, expiring with the run's other keys.
 */
export class RunResults {
  constructor(private readonly ctx: StoreContext) {}

  /**
   * Keeps `text` under `handle` unless the run's kept results would pass `maxRunBytes`.
   * Throws StoreError `not_found`, `lease_lost`, `stale_fence`.
   */
  async keep({ runId, fence, handle, text, maxRunBytes }: KeepInput): Promise<KeptResult> {
    if (!HANDLE.test(handle)) throw new TypeError(`not a result handle: ${JSON.stringify(handle)}`);
    const keys = this.ctx.keys.run(runId);
    const reply = await this.ctx.script(
      'keepResult',
      [keys.header, keys.results, keys.lease],
      [fence, handle, text, maxRunBytes],
    );
    if (reply === RUN_FULL) {
      return {
        kept: false,
        reason: `this run's kept results would pass ${maxRunBytes} bytes`,
      };
    }
    replyCount('keepResult', reply, { runId, handle });
    return { kept: true };
  }

  /** The text kept under `handle`, or null (never kept, or expired with the run). */
  async read(runId: string, handle: string): Promise<string | null> {
    if (!HANDLE.test(handle)) return null;
    return this.ctx.redis.hget(this.ctx.keys.run(runId).results, handle);
  }
}

/** The engine's `ResultStore` port for one run, writing under the caller's lease. */
export function runResultStore(results: RunResults, runId: string, fence: number): ResultStore {
  return {
    keep: (handle, text, maxRunBytes) => results.keep({ runId, fence, handle, text, maxRunBytes }),
    read: (handle) => results.read(runId, handle),
  };
}
