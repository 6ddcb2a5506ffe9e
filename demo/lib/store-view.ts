/**
 * Reading what loopgate stored, as an operator would: the run's trace through the operator CLI's own
 * code (`loopgate trace <runId>`, run in this process), and the store itself for the few facts the
 * demo waits on (a card recorded on its approval, a run's status).
 */
import type { Writable } from 'node:stream';
import { runCli } from '../../src/cli/cli.js';
import { openStore } from '../../src/cli/open-store.js';
import type { Store } from '../../src/store/index.js';

export interface StoreAddress {
  redisUrl: string;
  prefix: string;
}

const cliEnv = (at: StoreAddress) => ({ REDIS_URL: at.redisUrl, LOOPGATE_PREFIX: at.prefix });

/** Prints `loopgate trace <runId>` to `out`; resolves with the CLI's exit status. */
export function printTrace(at: StoreAddress, runId: string, out: Writable): Promise<number> {
  return runCli(['trace', runId, '--max-chars', '260'], {
    stdout: out,
    stderr: process.stderr,
    env: cliEnv(at),
    now: () => Date.now(),
  });
}

/** The run store under the stage's prefix, as the processes open it. */
export function openStageStore(at: StoreAddress): Promise<{ store: Store; close(): Promise<void> }> {
  return openStore(cliEnv(at));
}

/**
 * True once loopgate has recorded where an approval's card is: until then a click on it is refused as
 * "still being set up", so a person (or the demo) clicks after this.
 */
export async function cardRecorded(store: Store, approvalId: string): Promise<boolean> {
  return (await store.approvals.get(approvalId))?.card != null;
}
