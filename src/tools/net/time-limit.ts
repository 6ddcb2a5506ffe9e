/** A caller's abort signal combined with a tool's own time limit, telling the two causes apart. */
export interface TimeLimit {
  /** Aborted when either the caller's signal or the time limit fires. */
  signal: AbortSignal;
  timeoutMs: number;
  /** True when the time limit (not the caller) caused the abort. */
  expired(): boolean;
}

export function timeLimit(caller: AbortSignal, timeoutMs: number): TimeLimit {
  const timer = AbortSignal.timeout(timeoutMs);
  return {
    signal: AbortSignal.any([caller, timer]),
    timeoutMs,
    expired: () => timer.aborted && !caller.aborted,
  };
}
