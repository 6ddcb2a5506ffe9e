/**
 * Each calendar freeze's feed read once, as a worker would read it: how many windows it holds and whether
 * one is in force now, or why it cannot be read. Unreadable is a warning, not a failure: loopgate runs,
 * and the rules on that freeze fail closed (asked of people) until the calendar can be read.
 */
import type { Policy } from '../config/policy.js';
import { CALENDAR_AHEAD_DAYS, CALENDAR_PAST_DAYS, readCalendarsOnce } from '../policy/calendar/refresher.js';
import { calendarFreezes, freezeInForce } from '../policy/freezes.js';
import { type CheckResult, ok, warn } from './types.js';

export async function calendarChecks(
  policy: Pick<Policy, 'freezes'>,
  env: Readonly<Record<string, string | undefined>>,
  now = Date.now(),
): Promise<CheckResult[]> {
  await readCalendarsOnce(policy.freezes, env, now);
  return calendarFreezes(policy.freezes).map(([name, calendar]) => {
    const view = calendar.view.current;
    if (view.kind === 'unknown') {
      return warn(
        `freeze ${name}`,
        `${view.why}: until its calendar is read, rules on this freeze cannot be decided and ask people`,
      );
    }
    const freeze = policy.freezes[name];
    const inForce = freeze && freezeInForce(freeze, now) === true ? 'in force now' : 'not in force now';
    return ok(
      `freeze ${name}`,
      `calendar read: ${view.intervals.length} windows from ${CALENDAR_PAST_DAYS} days ago to ${CALENDAR_AHEAD_DAYS} days ahead; ${inForce}`,
    );
  });
}
