import type { StoreContext } from './context.js';
import { type ScriptName, scriptSource } from './scripts.js';

/** What a script sent with WAIT returned, and whether enough replicas have its write. */
export interface ReplicatedReply {
  reply: unknown;
  /** True when WAIT is off (`waitReplicas` 0) or at least `waitReplicas` replicas acknowledged. */
  confirmed: boolean;
  /** Replicas WAIT reported (0 when WAIT failed, e.g. on a node that is no longer a primary). */
  replicas: number;
}

/**
 * The node could not be reached or no longer serves the slot (a failover in progress). Sending the script
 * again is safe: after a redirection it did not run, and after a lost connection a resend is recognised
 * by its nonce as the call that ran (every script here is written for resends).
 */
const UNREACHED = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN)\b|^Connection is closed|^Too many Cluster redirections/;
const ATTEMPTS = 3;

/**
 * Runs one of the store's scripts and, when `waitReplicas` > 0, `WAIT waitReplicas waitTimeoutMs` right
 * behind it in one pipeline. WAIT covers the writes of the connection it is sent on, and in a Cluster
 * ioredis sends a pipeline to the node serving its keys' slot: the script and the WAIT share that node's
 * connection, which a separate WAIT (keyless, so sent to any node) would not.
 *
 * The script goes as EVAL with its source: with EVALSHA a NOSCRIPT reply would make ioredis send it
 * again outside the pipeline, after the WAIT, which would then confirm nothing. When the node was not
 * reached (a failover moved the slot), a keyed command through the client follows ioredis' own
 * redirection and reconnection and updates its slot map, then the pipeline is sent again, at most
 * ATTEMPTS times in all.
 */
export async function scriptWithWait(
  ctx: StoreContext,
  name: ScriptName,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<ReplicatedReply> {
  const { waitReplicas, waitTimeoutMs } = ctx.options;
  if (waitReplicas === 0) {
    return { reply: await ctx.script(name, keys, args), confirmed: true, replicas: 0 };
  }
  for (let attempt = 1; ; attempt++) {
    const replies = await ctx.redis
      .pipeline()
      .eval(scriptSource(name), keys.length, ...keys, ...args)
      .wait(waitReplicas, waitTimeoutMs)
      .exec();
    const [scriptReply, waitReply] = replies ?? [];
    const scriptError = scriptReply?.[0];
    if (scriptError) {
      if (attempt < ATTEMPTS && UNREACHED.test(scriptError.message) && keys[0] !== undefined) {
        await ctx.redis.exists(keys[0]);
        continue;
      }
      throw scriptError;
    }
    const replicas = waitReply && !waitReply[0] ? Number(waitReply[1]) : 0;
    return { reply: scriptReply?.[1], confirmed: replicas >= waitReplicas, replicas };
  }
}
