/**
 * Fairness inside one worker process: at most `maxPerRequester` runs of one person are worked at once.
 * A person's further questions wait (their start jobs are put back as delayed) while everyone else's
 * keep flowing, so one requester cannot take every slot of a process. A thread already works one run at
 * a time (its other messages wait in the thread's inbox), so no thread can either.
 */
export class RequesterSlots {
  private readonly active = new Map<string, number>();

  constructor(private readonly maxPerRequester: number) {}

  /** Takes a slot for `requester`; returns its release function, or null when they have none left. */
  tryTake(requester: string): (() => void) | null {
    const held = this.active.get(requester) ?? 0;
    if (held >= this.maxPerRequester) return null;
    this.active.set(requester, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = (this.active.get(requester) ?? 1) - 1;
      if (now <= 0) this.active.delete(requester);
      else this.active.set(requester, now);
    };
  }

  /** Runs of `requester` being worked now. */
  held(requester: string): number {
    return this.active.get(requester) ?? 0;
  }
}
