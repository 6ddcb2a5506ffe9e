import type { GatedCall } from '../loop/gated-calls.js';
import type { Clock, ExecutionLedger } from '../loop/ports.js';
import type { RunState } from '../loop/run-state.js';
import type { ToolResult } from '../loop/tool-result.js';
import { StoreError } from './errors.js';
import { approvalIdFor } from './ids.js';
import type { LedgerChange, LedgerStore } from './ledger/ledger-store.js';
import type { TraceEntry } from './records.js';
import type { PersistedCounts, RunStore } from './runs/run-store.js';

/**
 * The engine's `Checkpoint` port over the run store for one lease: each call persists only what the
 * step added, with the trace entries recorded since the previous call, in one round trip, and
 * remembers the new counts. A lost lease makes `checkpoint` throw (StoreError `lease_lost` /
 * `stale_fence`), which the engine lets propagate; the trace entries of a refused save are dropped
 * with it, so the trace never describes a step the history does not hold.
 */
export class RunCheckpointer {
  private counts: PersistedCounts;
  private cancel = false;

  constructor(
    private readonly runs: RunStore,
    private readonly runId: string,
    private readonly fence: number,
    persisted: PersistedCounts,
  ) {
    this.counts = { ...persisted };
  }

  /** A `Checkpoint`; `trace` is what the caller recorded since the previous call. */
  readonly checkpoint = async (state: RunState, trace: readonly TraceEntry[] = []): Promise<void> => {
    const saved = await this.runs.saveStep({
      runId: this.runId,
      fence: this.fence,
      state,
      persisted: this.counts,
      trace,
    });
    this.counts = saved.persisted;
    this.cancel ||= saved.cancelRequested;
  };

  get persisted(): PersistedCounts {
    return { ...this.counts };
  }

  /** A cancel was requested; seen by the latest checkpoint. */
  get cancelRequested(): boolean {
    return this.cancel;
  }
}

export interface LedgerPortOptions {
  runId: string;
  fence: number;
  clock: Clock;
  /** The approval of a call; default `approvalIdFor(runId, call.toolCallId)` (round 1). */
  approvalIdOf?: (call: GatedCall) => string;
}

const failed = (code: string, message: string): ToolResult => ({ ok: false, error: { code, message } });

const notConfirmedText = (tool: string) =>
  `Not run: Redis could not confirm that the record of ${tool} starting reached a replica, so it was not started and nothing happened. It can be approved again from its card.`;

/**
 * The engine's `ExecutionLedger` port over the ledger store. `begin` proceeds only when this call
 * moved the entry to `executing`. An entry found `executing` belongs to a crashed attempt: it becomes
 * `outcome_unknown` and is reported, not run again, unless the tool is idempotent. An `executing` record
 * that no replica confirmed (store option `waitReplicas`) is undone and reported as not run. A lost lease
 * throws.
 */
export function storeExecutionLedger(ledger: LedgerStore, options: LedgerPortOptions): ExecutionLedger {
  const approvalIdOf =
    options.approvalIdOf ?? ((call: GatedCall) => approvalIdFor(options.runId, call.toolCallId));
  const { fence, clock } = options;
  return {
    async begin(call, plans) {
      const approvalId = approvalIdOf(call);
      let began: LedgerChange;
      try {
        began = await ledger.begin({
          approvalId,
          fence,
          argsHash: call.argsHash,
          now: clock.now(),
          retryUnknown: call.idempotent,
          ...(plans ? { plans } : {}),
        });
      } catch (error) {
        if (error instanceof StoreError && error.code === 'not_approved') {
          return {
            proceed: false,
            result: failed('approval_mismatch', 'no approval is recorded for this call'),
          };
        }
        if (error instanceof StoreError && error.code === 'args_mismatch') {
          return {
            proceed: false,
            result: failed('approval_mismatch', 'these arguments are not the ones that were approved'),
          };
        }
        if (error instanceof StoreError && error.code === 'durability_unconfirmed') {
          return { proceed: false, result: failed('durability_unconfirmed', notConfirmedText(call.tool)) };
        }
        throw error;
      }
      if (began.changed) return { proceed: true };
      const { entry } = began;
      if ((entry.status === 'succeeded' || entry.status === 'failed') && entry.result) {
        return { proceed: false, result: entry.result };
      }
      if (entry.status === 'executing') await ledger.markOutcomeUnknown(approvalId, fence, clock.now());
      return {
        proceed: false,
        result: failed(
          'outcome_unknown',
          `${call.tool} was started before a crash and its outcome is unknown; it was not run again`,
        ),
      };
    },
    async unstarted(call) {
      const entry = await ledger.get(approvalIdOf(call));
      // No entry: nothing is approved, and begin refuses it without a plan.
      return entry !== null && ['approved', 'not_started', 'plan_blocked'].includes(entry.status);
    },
    async block(call, result, plans) {
      await ledger.block({ approvalId: approvalIdOf(call), fence, result, plans, now: clock.now() });
    },
    async finish(call, result) {
      await ledger.finish({
        approvalId: approvalIdOf(call),
        fence,
        outcome: result.ok ? 'succeeded' : 'failed',
        result,
        now: clock.now(),
      });
    },
  };
}
