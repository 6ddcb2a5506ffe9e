/**
 * Plans bound to the decision. A tool with `plan(args, ctx)` says, read-only, what executing a call
 * would change now. The plan is computed when the call is gated (shown on the card), and again
 * immediately before an approved call executes: the call runs only when the plan current then is the
 * same plan (by the tool's `samePlan`, default exact) as the one the deciding approvers were shown.
 */
import { createHash } from 'node:crypto';
import { type CallContext, toolContext, withTimeout } from './execute.js';
import type { CallPlan, PlanHashes } from './gated-calls.js';
import type { AnyTool } from './tool-contract.js';

/**
 * Longest plan text kept and shown. A longer plan is a failed plan: approvers cannot approve what they
 * cannot be shown whole (the card's Full text modal holds about this much next to the arguments).
 */
export const MAX_PLAN_CHARS = 20_000;

export function planHash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The tool's plan of `args` now, or why it could not be computed; undefined for a tool without `plan`. */
export async function planCall(
  tool: AnyTool,
  args: unknown,
  call: CallContext,
  timeoutMs: number,
): Promise<CallPlan | undefined> {
  const plan = tool.plan;
  if (!plan) return undefined;
  try {
    const text = await withTimeout(`${tool.name} plan`, timeoutMs, (signal) =>
      plan(args, toolContext(call, signal)),
    );
    if (typeof text !== 'string') return { ok: false, error: 'the plan is not text' };
    if (text.length > MAX_PLAN_CHARS) {
      return {
        ok: false,
        error: `the plan is ${text.length} characters long; at most ${MAX_PLAN_CHARS} can be shown to approvers`,
      };
    }
    return { ok: true, text, hash: planHash(text) };
  } catch (err) {
    return { ok: false, error: (err as Error).message || String(err) };
  }
}

/**
 * Whether the plan current at execution is the plan the approvers saw. A failed or missing approved plan
 * is never the same (nobody approved a plan), and a `samePlan` that throws says "not the same".
 */
function isSamePlan(tool: AnyTool, approved: CallPlan | undefined, current: CallPlan): boolean {
  if (!approved?.ok || !current.ok) return false;
  if (!tool.samePlan) return approved.hash === current.hash;
  try {
    return tool.samePlan(approved.text, current.text) === true;
  } catch {
    return false;
  }
}

/** What the plan check before execution found. */
type PlanCheck =
  | { kind: 'same'; plans: PlanHashes }
  | { kind: 'changed'; current: CallPlan & { ok: true }; plans: PlanHashes }
  | { kind: 'failed'; error: string; plans: PlanHashes };

/** Computes the plan again and compares it with the approved one. */
export async function checkPlan(
  tool: AnyTool,
  args: unknown,
  approved: CallPlan | undefined,
  call: CallContext,
  timeoutMs: number,
): Promise<PlanCheck> {
  const current = (await planCall(tool, args, call, timeoutMs)) as CallPlan;
  const plans: PlanHashes = {
    approved: approved?.ok ? approved.hash : null,
    current: current.ok ? current.hash : null,
  };
  if (!current.ok) return { kind: 'failed', error: current.error, plans };
  if (isSamePlan(tool, approved, current)) return { kind: 'same', plans };
  return { kind: 'changed', current, plans };
}
