/**
 * Tasks that need capabilities of other branches: skipped with the reason until a hook is installed,
 * then run through the hook (stand-in hooks here, since the capabilities are not merged yet).
 */
import { describe, expect, it } from 'vitest';
import type { EvalIntegrations, RuleVerdict } from '../../src/eval/features.js';
import { defaultIntegrations, missingFeatures } from '../../src/eval/features.js';
import { loadSuite } from '../../src/eval/suite.js';
import { decideAndContinue } from '../../src/loop/run.js';
import type { GatedCall } from '../../src/loop/types.js';
import { play, suiteWith } from './support.js';

/** A restart in staging, needing policy rules; its policy has no rules yet, so it loads today. */
const RULE_TASK = `id: staging-by-rule
title: restart staging; a rule would allow it
needs: [policy_rules]
question: restart search in staging
approver:
  - match: { tool: run_action }
    decide: approve
expect:
  state: [{ path: services.search.staging.restarts, equals: 1 }]
oracle:
  - calls: [{ tool: run_action, args: { action: restart_service, params: { service: search, env: staging } } }]
  - answer: Restarted search in staging.
`;

const EDIT_TASK = `id: edited-page
title: the approver lowers the severity
needs: [approval_edit]
question: page search
approver:
  - match: { tool: page_oncall }
    decide: edit
    args: { severity: warning }
oracle:
  - calls: [{ tool: page_oncall, args: { summary: search slow, severity: critical } }]
  - answer: The lead changed the page before deciding it.
`;

const stagingRule = (call: GatedCall): RuleVerdict =>
  (call.args as { params?: { env?: string } }).params?.env === 'staging'
    ? { kind: 'allow', rule: 'staging-restarts' }
    : { kind: 'ask' };

describe('tasks needing other capabilities', () => {
  it('are skipped with the reason while no hook is installed (none is, today)', () => {
    expect(defaultIntegrations()).toEqual({});
    expect(missingFeatures(['policy_rules', 'sub_agents'], {})).toEqual([
      { feature: 'policy_rules', note: expect.stringMatching(/^needs policy rules/) },
      { feature: 'sub_agents', note: expect.stringMatching(/^needs sub-agents/) },
    ]);
    const rules: EvalIntegrations = { rules: { verdict: () => ({ kind: 'ask' }), enforcedByRunner: false } };
    expect(missingFeatures(['policy_rules'], rules)).toEqual([]);
  });

  it('count approvals a rule would allow as not needed, when the rules hook only classifies', async () => {
    const suite = await suiteWith({ 'a.yaml': RULE_TASK });
    try {
      const loaded = await loadSuite(suite.dir);
      const hook: EvalIntegrations = {
        rules: { verdict: (_p, c) => stagingRule(c), enforcedByRunner: false },
      };
      const { record, transcript } = await play('staging-by-rule', undefined, hook, loaded);
      expect(transcript.asked.map((a) => [a.decidedBy, a.decision, a.ruleWouldAllow])).toEqual([
        ['person', 'approved', true],
      ]);
      expect(record.metrics).toMatchObject({ approvalsAsked: 1, approvalsByRule: 0, notNeededRule: 1 });
      expect(record.passed).toBe(true);
    } finally {
      await suite.remove();
    }
  });

  it('let a rule decide before any person when the runner enforces rules', async () => {
    const suite = await suiteWith({ 'a.yaml': RULE_TASK });
    try {
      const loaded = await loadSuite(suite.dir);
      const hook: EvalIntegrations = {
        rules: { verdict: (_p, c) => stagingRule(c), enforcedByRunner: true },
      };
      const { record, transcript } = await play('staging-by-rule', undefined, hook, loaded);
      expect(transcript.asked).toEqual([
        expect.objectContaining({ decidedBy: 'rule', decision: 'approved' }),
      ]);
      expect(transcript.runs[0]?.actions[0]).toMatchObject({
        outcome: 'succeeded',
        decidedBy: 'rule:staging-restarts',
      });
      expect(record.metrics).toMatchObject({ approvalsAsked: 0, approvalsByRule: 1, notNeededRule: 0 });
      expect(transcript.world.services.search?.staging?.restarts).toBe(1);
    } finally {
      await suite.remove();
    }
  });

  it('hand an edit to the edit hook with the changed arguments merged over the shown ones', async () => {
    const suite = await suiteWith({ 'a.yaml': EDIT_TASK });
    try {
      const loaded = await loadSuite(suite.dir);
      const seen: unknown[] = [];
      const hook: EvalIntegrations = {
        // A stand-in: the real hook (issue 13) opens a new round with the new hash; this one records the
        // edit and rejects the original call, so the run goes on.
        edit: async (state, call, args, by, deps) => {
          seen.push(args);
          return decideAndContinue(
            state,
            [{ toolCallId: call.toolCallId, kind: 'rejected', by, reason: 'edited' }],
            deps,
          );
        },
      };
      const { transcript } = await play('edited-page', undefined, hook, loaded);
      expect(seen).toEqual([{ summary: 'search slow', severity: 'warning' }]);
      expect(transcript.asked.map((a) => [a.decision, a.by])).toEqual([['edited', 'U0LEAD']]);
      expect(transcript.stopReason).toBe('completed');
    } finally {
      await suite.remove();
    }
  });
});
