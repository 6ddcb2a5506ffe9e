import { LoopgateError } from '../loop/errors.js';

/**
 * Negative results of the Lua scripts in ./lua (each script's header lists the ones it returns). The
 * numbers are part of the scripts' contract; the names are the `code` of the `StoreError` thrown.
 */
export const ScriptCode = {
  /** The run (or approval, or ledger entry) does not exist, or has expired. */
  not_found: -1,
  /** Nobody holds the run's lease (it expired or was released). */
  lease_lost: -2,
  /** Someone acquired the lease after the caller: the caller's fencing token is stale. */
  stale_fence: -3,
  /** Another holder has the lease. */
  busy: -4,
  /** The caller's count of persisted messages or evidence differs from the stored one. */
  count_mismatch: -5,
  /** The gated call has no `approved` ledger entry (not approved, or not decided yet). */
  not_approved: -6,
  /** The arguments about to be executed are not the ones that were approved. */
  args_mismatch: -7,
  /** "Approve again" on a call whose outcome is neither unknown nor not started: nothing to approve again. */
  not_unknown: -8,
  /** A person's decision on an approval of a run that has already ended (nothing would run it). */
  run_ended: -9,
  /** An edit of an approval round that another edit replaced first. */
  edited_already: -10,
  /** An edit arriving at or after the approval's expiry. */
  expired: -11,
  /** An edit of an approval that is no longer pending (decided, or replaced by an edit). */
  not_pending: -12,
  /** A comment on feedback the person never gave (recordFeedback first). */
  no_feedback: -13,
  /** Would approve / Would reject on an approval that is not a shadow call. */
  not_shadow: -14,
  /** A click on a budget ask card of an earlier round than the run's current ask. */
  stale_round: -15,
} as const;

export type StoreErrorCode =
  | keyof typeof ScriptCode
  | 'corrupt_record'
  | 'not_append_only'
  /** Fewer replicas than `waitReplicas` confirmed a write (Redis WAIT); what it guarded did not happen. */
  | 'durability_unconfirmed';

const byNumber = new Map<number, keyof typeof ScriptCode>(
  Object.entries(ScriptCode).map(([name, n]) => [n, name as keyof typeof ScriptCode]),
);

/** A store operation was refused (see `code`) or found data it cannot read. */
export class StoreError extends LoopgateError {
  declare readonly code: StoreErrorCode;
  constructor(
    code: StoreErrorCode,
    message: string,
    readonly context: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

/** Maps a script's negative result to a StoreError; other values are a broken script contract. */
export function scriptError(script: string, result: number, context: Record<string, unknown>): StoreError {
  const code = byNumber.get(result);
  if (code === undefined) {
    return new StoreError('corrupt_record', `${script} returned unknown code ${result}`, context);
  }
  return new StoreError(code, `${script}: ${code.replaceAll('_', ' ')}`, { script, ...context });
}
