/**
 * The sample run the README's pictures show, built by the code the bot runs: the policy is parsed by
 * the policy loader, the card's approvers, quorum and rule come from the policy gate, its preview from
 * the real `run_action` tool, its blocks from `approvalCard`, and the timeline's steps from `Timeline`.
 * Only the inputs (ids, times, the model's reason) are invented.
 */
import { parsePolicy } from '../../src/config/policy.js';
import type { EngineEvent } from '../../src/loop/engine-events.js';
import { decideGate } from '../../src/policy/gate.js';
import { type ApprovalView, approvalCard } from '../../src/slack/approval-card.js';
import type { SlackMessage } from '../../src/slack/block-kit.js';
import type { TaskUpdate } from '../../src/slack/surfaces/stream-writer.js';
import { Timeline } from '../../src/slack/surfaces/timeline.js';
import { createRunAction } from '../../src/tools/run-action.js';

/** Display names of the sample's people and group, as Slack would resolve their ids. */
export const SAMPLE_NAMES: Readonly<Record<string, string>> = {
  U07ALICE: 'alice',
  U07BOB: 'bob',
  S07SRELEADS: 'sre-leads',
};

const POLICY = `
approvals: { approvers: [S07SRELEADS], trusted: [run_action] }
rules:
  run_action:
    - name: staging restarts
      when: { action: restart_service, params.env: staging }
      outcome: allow
    - name: prod restarts
      when: { action: restart_service, params.env: prod }
      outcome: ask
      approvers: [S07SRELEADS]
      quorum: 2
      expiresAfterMinutes: 30
tools:
  run_action:
    actions:
      restart_service:
        description: Restart one service in one environment (rolling, no downtime)
        params:
          service: { enum: [payments, search] }
          env: { enum: [staging, prod] }
        http:
          method: POST
          url: "https://deploy.internal.example/api/restart/{service}?env={env}"
`;

const ASKED_AT = Date.UTC(2026, 11, 4, 3, 12);
const ARGS = { action: 'restart_service', params: { service: 'payments', env: 'prod' } };
const REASON = 'payments answers 503 on /health since 03:04 and the runbook says to restart it first.';

/** The approval card of a prod restart that needs two SRE leads, with Bob's approval in. */
export async function sampleApprovalCard(): Promise<SlackMessage> {
  const policy = parsePolicy(POLICY, { env: {}, source: 'sample policy' });
  const settings = policy.tools.run_action;
  if (!settings) throw new Error('the sample policy enables run_action');
  const tool = createRunAction(settings, { env: {} });
  const decision = decideGate(policy, tool.name, ARGS);
  if (decision.kind !== 'ask') throw new Error(`the sample call should be asked, not ${decision.kind}`);
  const preview = await tool.preview?.(ARGS as never, {} as never);
  const view: ApprovalView = {
    approvalId: 'apr_sample',
    runId: 'run_sample',
    tool: tool.name,
    effect: 'write',
    args: ARGS,
    argsHash: '0'.repeat(64),
    preview: preview ?? null,
    reason: REASON,
    requesterId: 'U07ALICE',
    approvers: decision.approvers,
    expiresAt: ASKED_AT + decision.expiresAfterMs,
    status: 'pending',
    ...(decision.rule ? { rule: decision.rule.label } : {}),
    quorum: decision.quorum,
    votes: ['U07BOB'],
    editable: true,
  };
  return approvalCard(view);
}

const RUN = 'run_sample';
const SAMPLE_EVENTS: EngineEvent[] = [
  {
    type: 'tool_started',
    runId: RUN,
    toolCallId: 'c1',
    tool: 'http_get',
    effect: 'read',
    args: { url: 'https://status.internal.example/payments' },
  },
  {
    type: 'tool_finished',
    runId: RUN,
    toolCallId: 'c1',
    tool: 'http_get',
    effect: 'read',
    ok: true,
    durationMs: 212,
  },
  {
    type: 'tool_started',
    runId: RUN,
    toolCallId: 'c2',
    tool: 'search_runbooks',
    effect: 'read',
    args: { query: 'payments slow' },
  },
  {
    type: 'tool_finished',
    runId: RUN,
    toolCallId: 'c2',
    tool: 'search_runbooks',
    effect: 'read',
    ok: true,
    durationMs: 31,
  },
  {
    type: 'tool_started',
    runId: RUN,
    toolCallId: 'c3',
    tool: 'prometheus_query',
    effect: 'read',
    args: { query: 'rate(http_requests_total{service="payments",code="503"}[5m])' },
  },
  {
    type: 'tool_finished',
    runId: RUN,
    toolCallId: 'c3',
    tool: 'prometheus_query',
    effect: 'read',
    ok: true,
    durationMs: 148,
  },
  {
    type: 'approval_needed',
    runId: RUN,
    calls: [
      {
        toolCallId: 'c4',
        tool: 'run_action',
        effect: 'write',
        args: ARGS,
        argsHash: '0'.repeat(64),
        idempotent: false,
      },
    ],
  },
];

/** Each step of the sample run's timeline as Slack last shows it: the latest task update per call. */
export function sampleTimeline(): TaskUpdate[] {
  const timeline = new Timeline();
  const latest = new Map<string, TaskUpdate>();
  for (const event of SAMPLE_EVENTS) {
    for (const update of timeline.updates(event)) latest.set(update.id, update);
  }
  return [...latest.values()];
}
