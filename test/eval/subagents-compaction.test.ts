/**
 * Trials with sub-agents and with compaction: child runs made and run in process by the runner, their
 * approvals decided by the scripted approver and their calls in the transcript; a long task whose history
 * is compacted while the oracle keeps its place; and for each, a trajectory that must fail.
 */
import { describe, expect, it } from 'vitest';
import { UNEXPECTED_CALL_REASON } from '../../src/eval/approver.js';
import { oracleModel, oracleStepFor, oracleSummary } from '../../src/eval/oracle-model.js';
import type { OracleStep } from '../../src/eval/task-schema.js';
import { isSummaryRequest } from '../../src/loop/compaction.js';
import { graderOf, play } from './support.js';

// biome-ignore lint/suspicious/noTemplateCurlyInString: the placeholder the oracle fills with the world's URL.
const W = '${WORLD}';

describe('sub-agents', () => {
  it("runs the child in process; the restart inside it waits for the lead's approval, recorded as the child's", async () => {
    const { record, transcript } = await play('delegate-restart-in-child');
    expect(transcript.children).toHaveLength(1);
    const child = transcript.children[0]!.state;
    expect(child).toMatchObject({ status: 'completed', agent: { name: 'deployer', depth: 1 } });
    expect(child.actions).toEqual([expect.objectContaining({ tool: 'run_action', outcome: 'succeeded' })]);
    expect(transcript.asked).toEqual([
      expect.objectContaining({ agent: 'deployer', decision: 'approved', decidedBy: 'person', by: 'U0LEAD' }),
    ]);
    // The parent reads the child's end: its answer and its actions.
    expect(transcript.runs[0]?.subagents).toEqual([
      expect.objectContaining({ agent: 'deployer', outcome: 'completed', childRunId: child.runId }),
    ]);
    expect(record.calls).toEqual([
      expect.stringMatching(/^ask_deployer \{.*→ ok$/),
      expect.stringMatching(/^\[deployer\] run_action \{.*"env":"staging".*→ succeeded$/),
      expect.stringMatching(/^\[deployer\] http_get \{.*→ ok$/),
    ]);
    expect(record.metrics).toMatchObject({ subagentRuns: 1, approvalsAsked: 1, steps: 2 + 3 });
    expect(transcript.world.services.payments?.staging?.restarts).toBe(1);
    expect(record.passed).toBe(true);
  });

  it('fails when the child restarts what the lead does not approve: nothing runs, the task is not done', async () => {
    const wrong: OracleStep[] = [
      {
        calls: [
          {
            tool: 'run_action',
            args: { action: 'restart_service', params: { service: 'payments', env: 'prod' } },
          },
        ],
      },
      { answer: 'The restart of payments in prod was rejected; nothing was restarted.' },
    ];
    const { record, transcript } = await play(
      'delegate-restart-in-child',
      [
        { calls: [{ tool: 'ask_deployer', args: { task: 'Restart payments.' } }] },
        { answer: 'The deployer could not restart payments: the lead rejected it.' },
      ],
      { agents: { deployer: wrong } },
    );
    expect(transcript.asked).toEqual([
      expect.objectContaining({ agent: 'deployer', decision: 'rejected', reason: UNEXPECTED_CALL_REASON }),
    ]);
    expect(graderOf(record, 'state').passed).toBe(false);
    expect(graderOf(record, 'answer').passed).toBe(false);
    expect(graderOf(record, 'claims').passed).toBe(true);
    expect(record.passed).toBe(false);
  });

  it("passes the child's finding on (read tools only, nobody asked), and fails an answer without it", async () => {
    const good = await play('delegate-log-dive');
    expect(good.transcript.children[0]?.state.agent?.name).toBe('logs');
    expect(good.transcript.asked).toEqual([]);
    expect(good.record.passed).toBe(true);
    const bad = await play('delegate-log-dive', [
      {
        calls: [
          {
            tool: 'ask_logs',
            args: { task: `Read ${W}/logs/checkout?env=prod and report the first error.` },
          },
        ],
      },
      { answer: 'The logs agent found nothing unusual in checkout.' },
    ]);
    expect(graderOf(bad.record, 'answer').notes).toEqual([
      'missing fact "PromoCodeValidator"',
      'missing fact "v57"',
    ]);
  });
});

describe('compaction', () => {
  it('compacts the long task while the oracle keeps its place: every shard read once, the fact kept', async () => {
    const { record, transcript } = await play('long-logs-compaction');
    const run = transcript.runs[0]!;
    expect(run.compactions?.length).toBeGreaterThanOrEqual(1);
    expect(record.metrics.compactions).toBe(run.compactions?.length);
    expect(transcript.calls.map((c) => (c.args as { url: string }).url.replace(/^.*q=/, ''))).toEqual(
      [1, 2, 3, 4, 5, 6, 7, 8].map((n) => `shard%20${n}`),
    );
    // The last request (the answer) was within the window: the history had been summarised.
    expect(run.compactions!.at(-1)!.tokensAfter).toBeLessThan(16_000 * 0.5);
    expect(run.compactions!.at(-1)!.summary).toMatch(/^\[oracle: \d+ replies summarised\]/);
    expect(record.passed).toBe(true);
  });

  it('fails an answer that names the wrong shard', async () => {
    const steps = [1, 2, 3, 4, 5, 6, 7, 8].map(
      (n): OracleStep => ({
        calls: [{ tool: 'http_get', args: { url: `${W}/logs/search?env=prod&q=shard%20${n}` } }],
      }),
    );
    const { record } = await play('long-logs-compaction', [
      ...steps,
      { answer: 'Shard 7 times out; the others look fine.' },
    ]);
    expect(record.metrics.compactions).toBeGreaterThanOrEqual(1);
    expect(graderOf(record, 'answer').passed).toBe(false);
    expect(record.passed).toBe(false);
  });

  it('the oracle counts the replies a summary stands for, across chained summaries', async () => {
    const steps: OracleStep[] = [0, 1, 2, 3, 4].map((i) => ({ answer: `step ${i}` }));
    const first = oracleSummary([
      { role: 'system', content: 'x' },
      {
        role: 'user',
        content:
          "The person's question:\nq\n\nThe part to summarise:\n[me] a\n  -> http_get {} (call o0_0)\n[result of http_get, call o0_0] {}\n[me] b",
      },
    ]);
    expect(first).toMatch(
      /^\[oracle: 2 replies summarised\] I made these calls: http_get \{\} \(call o0_0\)/,
    );
    const second = oracleSummary([
      {
        role: 'user',
        content: `The person's question:\nq\n\nSummary of the part before this one:\n${first}\n\nThe part to summarise:\n[me] c`,
      },
    ]);
    expect(second).toMatch(/^\[oracle: 3 replies summarised\]/);
    const view = [
      { role: 'system', content: 's' },
      { role: 'user', content: 'q' },
      { role: 'assistant', content: `[loopgate] compacted. My summary of it:\n${second}` },
      { role: 'assistant', content: 'later' },
    ];
    expect(oracleStepFor(steps, view)).toEqual({ index: 4, step: { answer: 'step 4' } });
    // The engine marks its summary calls, and the oracle answers them with a summary, not a step.
    const reply = await oracleModel(steps, {}).complete({
      messages: [
        { role: 'system', content: "You summarise the earlier part of an agent's run so that…" },
        { role: 'user', content: 'The part to summarise:\n[me] x' },
      ],
      tools: [],
      signal: new AbortController().signal,
      maxOutputTokens: 100,
    });
    expect(
      isSummaryRequest([{ role: 'system', content: "You summarise the earlier part of an agent's run" }]),
    ).toBe(true);
    expect(reply.content).toMatch(/^\[oracle: 1 replies summarised\]/);
  });
});
