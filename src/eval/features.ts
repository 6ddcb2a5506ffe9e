/**
 * Capabilities some tasks need that other branches are building. A task lists them under `needs:`; until
 * the capability's hook is given to the runner (`EvalIntegrations`, wired in `defaultIntegrations`), such
 * a task is skipped with the note below, never run half-way or counted as a failure.
 */
import type { Policy } from '../config/policy.js';
import type { RunOutcome } from '../loop/run.js';
import type { EngineDeps, GatedCall, RunState } from '../loop/types.js';

export const FEATURES = {
  policy_rules: {
    note: 'needs policy rules (issue 13: argument rules, quorum, grants in src/policy)',
  },
  approval_edit: {
    note: 'needs approval edits (issue 13: an approver changes the arguments, a new round with a new hash)',
  },
  sub_agents: {
    note: 'needs sub-agents (issue 11 §2: policy key agents:, ask_<name> tools)',
  },
  context_compaction: {
    note: 'needs context compaction (issue 11 §3)',
  },
} as const;

export type Feature = keyof typeof FEATURES;

/** What an allow/deny rule of the policy says about a gated call (issue 13). */
export type RuleVerdict = { kind: 'ask' } | { kind: 'allow'; rule: string } | { kind: 'deny'; rule: string };

/**
 * Hooks the runner calls when the capability exists. Each is optional: without it, tasks needing the
 * capability are skipped, and the metric it feeds is reported as not measured (null).
 */
export interface EvalIntegrations {
  /**
   * policy_rules: what the policy's rules say about a gated call. Every call put to the scripted person
   * is classified, and those a rule would `allow` are counted as "approvals not needed (rule)": a person
   * was bothered about a call the policy's own rules spare them. With `enforcedByRunner` (rules applied
   * where the worker applies them, which the runner stands in for), `allow` and `deny` verdicts decide
   * the call before any person is asked, recorded as decided by the rule.
   */
  rules?: {
    verdict: (policy: Policy, call: GatedCall) => RuleVerdict;
    enforcedByRunner: boolean;
  };
  /**
   * approval_edit: the approver changed the arguments. Returns the run after the edited call has been
   * decided (a new approval round with the new arguments' hash, then executed or paused again).
   */
  edit?: (
    state: RunState,
    call: GatedCall,
    args: unknown,
    by: string,
    deps: EngineDeps,
  ) => Promise<RunOutcome>;
  /** sub_agents: engine deps that let `ask_<name>` calls run child runs in process. */
  subAgents?: (deps: EngineDeps, policy: Policy) => EngineDeps;
  /** context_compaction: engine deps that compact the history when it grows. */
  compaction?: (deps: EngineDeps, policy: Policy) => EngineDeps;
}

/** The integrations the runner uses for each feature; a feature counts as present only with its hook. */
const HOOK_OF: Record<Feature, keyof EvalIntegrations> = {
  policy_rules: 'rules',
  approval_edit: 'edit',
  sub_agents: 'subAgents',
  context_compaction: 'compaction',
};

/** The features of `needs` that cannot run here, each with why. */
export function missingFeatures(
  needs: readonly Feature[],
  integrations: EvalIntegrations,
): { feature: Feature; note: string }[] {
  return needs
    .filter((f) => integrations[HOOK_OF[f]] === undefined)
    .map((f) => ({ feature: f, note: FEATURES[f].note }));
}

/**
 * The hooks of the capabilities present in this build. Empty today: the branches that add policy rules,
 * approval edits, sub-agents and compaction wire theirs here, and their tasks start to run.
 */
export function defaultIntegrations(): EvalIntegrations {
  return {};
}
