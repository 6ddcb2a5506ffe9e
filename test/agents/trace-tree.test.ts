import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traceTree } from '../../src/agents/trace-tree.js';
import { childRunIdFor } from '../../src/loop/delegate.js';
import type { Message } from '../../src/loop/messages.js';
import type { RunState } from '../../src/loop/run-state.js';
import { createRun } from '../../src/loop/state.js';
import { traceModal } from '../../src/slack/trace-modal.js';
import { emptyWorkDir, runCli } from '../cli/cli-harness.js';
import { expectValidViewBlocks, shownText } from '../slack/block-checks.js';
import { type StoreFixture, storeFixture } from '../store/redis-fixture.js';
import { slack, T0 } from '../store/run-state-fixture.js';

const ok = (data: unknown) => JSON.stringify({ ok: true, data });

/** A finished run that made one call of `tool` (whose result is `result`) and answered `answer`. */
function finishedRun(
  runId: string,
  question: string,
  tool: string,
  args: unknown,
  result: string,
  answer: string,
) {
  const base = createRun({ runId, requester: { userId: 'U0ALICE' }, systemPrompt: 's', question, now: T0 });
  const messages: Message[] = [
    ...base.messages,
    {
      role: 'assistant',
      content: null,
      toolCalls: [{ id: 'lg1_0_a', name: tool, arguments: JSON.stringify(args) }],
    },
    { role: 'tool', toolCallId: 'lg1_0_a', name: tool, content: result },
    { role: 'assistant', content: answer },
  ];
  return {
    ...base,
    messages,
    status: 'completed',
    stopReason: 'completed',
    stopMessage: 'Completed.',
    answer: [answer],
    step: 2,
    usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.001, activeMs: 1_500, activeSince: null },
  } satisfies RunState;
}

const parentId = 'r-parent';
const childId = childRunIdFor(parentId, 'lg1_0_a');
const grandchildId = childRunIdFor(childId, 'lg1_0_a');
const link = (name: string, parent: string, depth: number, lineage: string[]) => ({
  name,
  parentRunId: parent,
  parentToolCallId: 'lg1_0_a',
  depth,
  lineage,
});
const record = (agent: string, id: string) => ({
  toolCallId: 'lg1_0_a',
  agent,
  childRunId: id,
  outcome: 'completed' as const,
  stopReason: 'completed' as const,
  actions: [],
});

const parent: RunState = {
  ...finishedRun(
    parentId,
    'How is payments?',
    'ask_triage',
    { task: 'Check payments' },
    ok({ agent: 'triage', answer: 'fine' }),
    'Payments is fine.',
  ),
  subagents: [record('triage', childId)],
};
const child: RunState = {
  ...finishedRun(
    childId,
    'Check payments',
    'ask_metrics',
    { task: 'Latency?' },
    ok({ agent: 'metrics', answer: '120 ms' }),
    'fine',
  ),
  agent: link('triage', parentId, 1, ['triage']),
  subagents: [record('metrics', grandchildId)],
};
const grandchild: RunState = {
  ...finishedRun(
    grandchildId,
    'Latency?',
    'prometheus_query',
    { query: 'p99' },
    ok('p99 = 120 ms'),
    '120 ms',
  ),
  agent: link('metrics', childId, 2, ['triage', 'metrics']),
};

let fx: StoreFixture;
const work = emptyWorkDir();
beforeAll(async () => {
  fx = storeFixture();
  await fx.store.runs.createRun(parent, slack);
  await fx.store.runs.createRun(child, slack, { index: false });
  await fx.store.runs.createRun(grandchild, slack, { index: false });
  await fx.store.runs.appendTrace(parentId, [
    {
      type: 'subagent_finished',
      at: T0 + 900,
      toolCallId: 'lg1_0_a',
      agent: 'triage',
      childRunId: childId,
      outcome: 'completed',
      durationMs: 812,
    },
  ]);
});
afterAll(async () => {
  await fx.cleanup();
  work.remove();
});

describe('the trace tree of a run with sub-agents', () => {
  it("nests each child's trace in the call that asked it, down the levels", async () => {
    const view = await traceTree(fx.store.runs, parent, await fx.store.runs.readTrace(parentId));
    const call = view.steps[0]?.calls[0];
    expect(call).toMatchObject({
      tool: 'ask_triage',
      durationMs: 812,
      subagent: { agent: 'triage', runId: childId },
    });
    const childView = call?.subagent?.trace;
    expect(childView?.agent?.parentRunId).toBe(parentId);
    const grand = childView?.steps[0]?.calls[0]?.subagent;
    expect(grand).toMatchObject({ agent: 'metrics', runId: grandchildId });
    expect(grand?.trace?.steps[0]?.calls[0]?.tool).toBe('prometheus_query');
    // A limited depth names the deeper child without loading it.
    const shallow = await traceTree(fx.store.runs, parent, [], 1);
    expect(shallow.steps[0]?.calls[0]?.subagent?.trace?.steps[0]?.calls[0]?.subagent?.trace).toBeUndefined();
  });

  it('the Details modal shows the children indented under the call, and a child alone names its parent', async () => {
    const modal = traceModal(await traceTree(fx.store.runs, parent, []));
    expectValidViewBlocks(modal.blocks);
    const text = shownText(modal.blocks);
    expect(text).toContain(`↳ *Sub-agent triage* · run \`${childId}\` · *completed* · 2 steps · 120 tokens`);
    expect(text).toContain('> *triage · step 1*');
    expect(text).toContain(`↳ *Sub-agent triage › metrics* · run \`${grandchildId}\``);
    expect(text).toContain('> `prometheus_query`');
    const alone = shownText(traceModal(await traceTree(fx.store.runs, child, [])).blocks);
    expect(alone).toContain(`Sub-agent \`triage\` answering call \`lg1_0_a\` of run \`${parentId}\``);
  });

  it("the Details modal shows a long child's first and last steps, counting those left out", () => {
    const steps = Array.from({ length: 7 }, (_, i) => ({
      step: i + 1,
      text: `child step ${i + 1}`,
      calls: [],
    }));
    const view = {
      runId: parentId,
      status: 'completed' as const,
      stopReason: 'completed' as const,
      steps: [
        {
          step: 1,
          calls: [
            {
              toolCallId: 'lg1_0_a',
              tool: 'ask_triage',
              args: '{}',
              subagent: {
                agent: 'triage',
                runId: childId,
                trace: {
                  runId: childId,
                  status: 'completed' as const,
                  stopReason: 'completed' as const,
                  steps,
                },
              },
            },
          ],
        },
      ],
    };
    const modal = traceModal(view);
    expectValidViewBlocks(modal.blocks);
    const text = shownText(modal.blocks);
    for (const shown of [1, 2, 6, 7]) expect(text).toContain(`> *triage · step ${shown}*`);
    for (const hidden of [3, 4, 5]) expect(text).not.toContain(`child step ${hidden}`);
    expect(text).toContain('3 steps of triage not shown');
  });

  it('loopgate trace shows the child steps indented under the call; the child id opens it alone', async () => {
    const env = { REDIS_URL: 'redis://127.0.0.1:6379', LOOPGATE_PREFIX: `{${fx.prefix}}` };
    const tree = await runCli(['trace', parentId], env, work.dir);
    expect(tree).toMatchObject({ code: 0, stderr: '' });
    expect(tree.stdout).toContain(
      `      sub-agent triage, run ${childId}: completed (completed) (2 steps, 120 tokens, $0.0010, active 1.5 s)\n`,
    );
    expect(tree.stdout).toContain('      | Step 1\n      |   - ask_metrics');
    expect(tree.stdout).toContain(`      |       sub-agent metrics, run ${grandchildId}: completed`);
    expect(tree.stdout).toContain('      |       |   - prometheus_query');
    const alone = await runCli(['trace', childId], env, work.dir);
    expect(alone.code).toBe(0);
    expect(alone.stdout).toContain(`Run ${childId}: completed`);
    expect(alone.stdout).toContain(
      `  sub-agent triage (depth 1) answering call lg1_0_a of run ${parentId}\n`,
    );
  });
});
