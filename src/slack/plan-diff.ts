/**
 * The short difference between the approved plan and the plan current at execution, for the card that
 * asks again: lines only in the approved plan (`-`) and lines only in the current one (`+`), each line
 * counted as often as it occurs, in the order they appear. A reader sees what changed at a glance; the
 * whole of both plans is under Full text.
 */
interface PlanDiff {
  lines: string[];
  /** Changed lines left out past `max`. */
  more: number;
}

function countLines(lines: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of lines) counts.set(line, (counts.get(line) ?? 0) + 1);
  return counts;
}

/** Lines of `from` not matched by a line of `other`, in order. */
function unmatched(from: readonly string[], other: readonly string[]): string[] {
  const left = countLines(other);
  const out: string[] = [];
  for (const line of from) {
    const n = left.get(line) ?? 0;
    if (n > 0) left.set(line, n - 1);
    else out.push(line);
  }
  return out;
}

export function planDiff(approved: string, current: string, max = 12): PlanDiff {
  const before = approved.split('\n');
  const after = current.split('\n');
  const all = [
    ...unmatched(before, after).map((l) => `- ${l}`),
    ...unmatched(after, before).map((l) => `+ ${l}`),
  ];
  return { lines: all.slice(0, max), more: Math.max(0, all.length - max) };
}
