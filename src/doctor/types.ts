/** One line of `loopgate doctor`: what was checked and what was found. */
export interface CheckResult {
  /** What was checked, e.g. `slack auth` or `channel C0OPS`. */
  name: string;
  /**
   * `fail`: loopgate will not work as configured (exit 1); `warn`: it works, with a risk the detail
   * names; `skip`: not checked because a check it depends on failed.
   */
  status: 'ok' | 'warn' | 'fail' | 'skip';
  /** What was found, and on failure what to change (the variable or key to fix). */
  detail: string;
}

export const ok = (name: string, detail: string): CheckResult => ({ name, status: 'ok', detail });
export const warn = (name: string, detail: string): CheckResult => ({ name, status: 'warn', detail });
export const fail = (name: string, detail: string): CheckResult => ({ name, status: 'fail', detail });
export const skip = (name: string, detail: string): CheckResult => ({ name, status: 'skip', detail });
