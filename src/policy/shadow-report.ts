/**
 * `loopgate shadow report` figures (docs/approvals.md, "Shadow mode"), pure: the shadow calls of a time
 * range grouped per tool and rule, with what people said they would decide (would approve / would reject /
 * undecided), the acceptance rate among decided calls, the time to decide (p50, p95), and, for groups
 * whose decided calls were all accepted (at least `minCalls` of them), an `allow` rule that would have let
 * them through, as a YAML snippet with its evidence. The rule's conditions are the argument values every
 * accepted call shared (top-level strings, numbers and booleans), so it allows no more than was seen.
 */
import { stringify } from 'yaml';

export interface ShadowCall {
  approvalId: string;
  tool: string;
  /** The rule that asked (`rule 2 of run_action (…)`), or '' for the tool's default ask. */
  rule: string;
  requestedAt: number;
  /** What the first person to click said, when someone did. */
  decision?: { kind: 'would_approve' | 'would_reject'; by: string; at: number };
  /** The call's arguments, while its approval record still exists. */
  args?: unknown;
}

interface ShadowGroup {
  tool: string;
  rule: string;
  calls: number;
  wouldApprove: number;
  wouldReject: number;
  undecided: number;
  /** wouldApprove / (wouldApprove + wouldReject); null when nobody decided. */
  acceptanceRate: number | null;
  /** Time to decide of the decided calls, ms; null when nobody decided. */
  timeToDecideMs: { p50: number; p95: number } | null;
  /** An allow rule for calls like these, when every decided call was accepted. */
  suggestion: { yaml: string; evidence: string } | null;
}

export interface ShadowReport {
  from: number;
  to: number;
  groups: ShadowGroup[];
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) throw new RangeError('no values');
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

type Scalar = string | number | boolean;
const isScalar = (v: unknown): v is Scalar =>
  typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/** The top-level scalar argument values every call shares; null when an argument set is unknown. */
function sharedValues(argsList: readonly unknown[]): Record<string, Scalar> | null {
  if (argsList.length === 0 || argsList.some((a) => a === null || typeof a !== 'object' || Array.isArray(a)))
    return null;
  const [first, ...rest] = argsList as Record<string, unknown>[];
  const shared: Record<string, Scalar> = {};
  for (const [key, value] of Object.entries(first ?? {})) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key) || !isScalar(value)) continue;
    if (rest.every((a) => Object.hasOwn(a, key) && a[key] === value)) shared[key] = value;
  }
  return shared;
}

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

function suggestionFor(
  tool: string,
  rule: string,
  accepted: readonly ShadowCall[],
  group: Pick<ShadowGroup, 'calls' | 'wouldApprove' | 'undecided'>,
  range: { from: number; to: number },
): ShadowGroup['suggestion'] {
  const values = sharedValues(accepted.map((c) => c.args));
  // Without the arguments (records expired) nothing narrower than "every call" is known: no suggestion.
  if (values === null) return null;
  const name = `shadow: ${group.wouldApprove} of ${group.wouldApprove} would approve, ${day(range.from)}..${day(range.to)}`;
  const allowRule = {
    name: name.slice(0, 80),
    ...(Object.keys(values).length > 0 ? { when: values } : {}),
    outcome: 'allow',
  };
  const yaml = stringify({ approvals: { trusted: [tool] }, rules: { [tool]: [allowRule] } });
  const where = rule
    ? `put it before ${rule}, the rule that asked`
    : `it applies before the default ask of ${tool}`;
  const evidence = `${group.wouldApprove} of ${group.wouldApprove} decided calls would be approved (acceptance 100%), ${group.undecided} undecided, ${group.calls} shadow calls in all; ${Object.keys(values).length > 0 ? `conditions: the argument values all of them shared` : 'no argument value was shared by all of them, so the rule has no condition'}; ${where}`;
  return { yaml, evidence };
}

/** Groups `calls` per tool and rule; `minCalls`: accepted calls needed before an allow rule is suggested. */
export function shadowReport(
  calls: readonly ShadowCall[],
  range: { from: number; to: number },
  minCalls = 3,
): ShadowReport {
  const byKey = new Map<string, ShadowCall[]>();
  for (const call of calls) {
    const key = JSON.stringify([call.tool, call.rule]);
    const list = byKey.get(key) ?? [];
    list.push(call);
    byKey.set(key, list);
  }
  const groups = [...byKey.entries()].map(([key, list]): ShadowGroup => {
    const [tool, rule] = JSON.parse(key) as [string, string];
    const accepted = list.filter((c) => c.decision?.kind === 'would_approve');
    const rejected = list.filter((c) => c.decision?.kind === 'would_reject');
    const decided = accepted.length + rejected.length;
    const times = list
      .flatMap((c) => (c.decision ? [Math.max(0, c.decision.at - c.requestedAt)] : []))
      .sort((a, b) => a - b);
    const counts = { calls: list.length, wouldApprove: accepted.length, undecided: list.length - decided };
    return {
      tool,
      rule,
      ...counts,
      wouldReject: rejected.length,
      acceptanceRate: decided === 0 ? null : accepted.length / decided,
      timeToDecideMs: times.length === 0 ? null : { p50: percentile(times, 50), p95: percentile(times, 95) },
      suggestion:
        rejected.length === 0 && accepted.length >= minCalls
          ? suggestionFor(tool, rule, accepted, counts, range)
          : null,
    };
  });
  groups.sort((a, b) => a.tool.localeCompare(b.tool) || a.rule.localeCompare(b.rule));
  return { ...range, groups };
}
