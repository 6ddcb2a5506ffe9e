import { afterEach, describe, expect, it } from 'vitest';
import { askTool } from '../../src/agents/ask-tool.js';
import type { AgentDefinition } from '../../src/agents/catalog.js';
import { childRunIdFor } from '../../src/loop/delegate.js';
import { endRun } from '../../src/loop/finish.js';
import type { ModelPort, ModelReply, ModelRequest } from '../../src/loop/model-port.js';
import type { ToolResult } from '../../src/loop/tool-result.js';
import { childEndJobId } from '../../src/queue/job-ids.js';
import { addRunJob } from '../../src/queue/runs-queue.js';
import { approvalIdFor } from '../../src/store/ids.js';
import { deliverEnd } from '../../src/worker/deliver-end.js';
import { createHarness } from '../support/worker-harness.js';

type Harness = Awaited<ReturnType<typeof createHarness>>;
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const agent = (
  name: string,
  tools: string[] = [],
  budgets: AgentDefinition['budgets'] = {},
): AgentDefinition => ({
  name,
  description: `The ${name} agent.`,
  prompt: `You are ${name.toUpperCase()}.`,
  tools,
  budgets,
});

type Reply =
  | { text: string }
  | { calls: Array<{ name: string; args: unknown; id?: string }> }
  | { throws: Error };
/** Answers a request from the tool results so far (the `tool` messages after the question). */
type Brain = (results: ToolResult[], req: ModelRequest) => Reply;

/**
 * One model for a parent and its children, which call it concurrently: each request goes to the brain of
 * its run, told apart by the system prompt (a sub-agent's starts with its own `prompt`).
 */
function routedModel(brains: Record<string, Brain>): ModelPort & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  let n = 0;
  return {
    model: 'test-model',
    requests,
    async complete(req): Promise<ModelReply> {
      requests.push(req);
      const system = req.messages[0]?.role === 'system' ? req.messages[0].content : '';
      const key = Object.keys(brains).find((k) => system.startsWith(`You are ${k.toUpperCase()}.`)) ?? 'root';
      const results = req.messages.flatMap((m) =>
        m.role === 'tool' ? [JSON.parse(m.content) as ToolResult] : [],
      );
      const reply = brains[key]!(results, req);
      if ('throws' in reply) throw reply.throws;
      const usage = { inputTokens: 10, outputTokens: 5 };
      if ('text' in reply) return { content: reply.text, toolCalls: [], usage, model: 'test-model' };
      return {
        content: null,
        toolCalls: reply.calls.map((c) => ({
          id: c.id ?? `call_${n++}`,
          name: c.name,
          arguments: JSON.stringify(c.args),
        })),
        usage,
        model: 'test-model',
      };
    },
  };
}

const answerOf = (r: ToolResult | undefined) =>
  r?.ok ? (r.data as { answer: string }).answer : `error ${r?.error.code}: ${r?.error.message}`;

describe('worker: sub-agents', () => {
  it('two sub-agents asked at once both answer; the parent answers with both, in call order, once', async () => {
    const model = routedModel({
      root: (results) =>
        results.length === 0
          ? {
              calls: [
                { name: 'ask_triage', args: { task: 'Check payments' }, id: 'a' },
                { name: 'ask_writer', args: { task: 'Draft a note', context: 'payments is fine' }, id: 'b' },
              ],
            }
          : { text: `${answerOf(results[0])} | ${answerOf(results[1])}` },
      triage: (results) =>
        results.length === 0
          ? { calls: [{ name: 'lookup', args: { service: 'payments' } }] }
          : { text: 'payments ok' },
      writer: () => ({ text: 'draft ready' }),
    });
    h = await createHarness({ model, agents: [agent('triage', ['lookup']), agent('writer')] });
    h.startWorker();
    const data = h.startJob('how is payments?');
    const runId = await h.enqueueStart(data);
    const run = await h.waitForStatus(runId, 'completed');
    expect(run.state.answer).toEqual(['payments ok | draft ready']);
    const triageId = childRunIdFor(runId, 'lg1_0_a');
    const writerId = childRunIdFor(runId, 'lg1_1_b');
    const [triage, writer] = await Promise.all([
      h.store.runs.loadRun(triageId),
      h.store.runs.loadRun(writerId),
    ]);
    expect(triage?.state.agent).toEqual({
      name: 'triage',
      parentRunId: runId,
      parentToolCallId: 'lg1_0_a',
      depth: 1,
      lineage: ['triage'],
    });
    // Each child has its own history: its prompt, the task (with its context), its tools only.
    expect(writer?.state.messages[1]).toEqual({
      role: 'user',
      content: expect.stringMatching(
        /^Current time \(UTC\): \S+\.\n\nDraft a note\n\nContext from the agent that asked:\npayments is fine$/,
      ),
    });
    expect(triage?.state.requester).toEqual(run.state.requester);
    const triageRequest = model.requests.find((r) =>
      String(r.messages[0]?.content ?? '').startsWith('You are TRIAGE.'),
    );
    expect(triageRequest?.tools.map((t) => t.name)).toEqual(['lookup']);
    // The children's usage is charged to the parent: 2 own replies + 2 of triage + 1 of writer.
    expect(run.state.usage.inputTokens).toBe(50);
    expect(run.state.subagents?.map((s) => [s.agent, s.outcome])).toHaveLength(2);
    // One answer in the thread, the parent's; the children post nothing of their own.
    await h.waitFor('the final answer', () => h!.notifier.of('final').length === 1);
    expect(h.notifier.of('final').map((f) => f.runId)).toEqual([runId]);
    expect(h.notifier.calls.filter((c) => c.runId !== runId && c.type !== 'progress')).toEqual([]);
    // Progress: the parent says whom it asks; the children's steps show in the parent's placeholder.
    const progress = h.notifier.of('progress');
    expect(progress.map((p) => p.text)).toContain('Asking triage… · Asking writer…');
    const parentTs = progress.find((p) => p.runId === runId)?.placeholderTs;
    const childProgress = progress.filter((p) => p.runId === triageId);
    expect(childProgress.length).toBeGreaterThan(0);
    for (const p of childProgress) {
      expect(p.placeholderTs).toBe(parentTs);
      expect(p.text).toMatch(/^triage \(sub-agent\): /);
    }
    // Sub-agents' runs are reached through their parent, not listed with the thread's runs.
    const listed = await h.store.index.recent({ channel: { teamId: 'T1', channelId: 'C1' } });
    expect(listed.map((r) => r.runId)).toEqual([runId]);
    // A hand-over delivered again later changes nothing.
    await addRunJob(h.queue, { name: 'child_end', data: { v: 1, runId, childRunId: triageId, watch: 7 } });
    await h.waitFor('the repeated hand-over to be done', async () =>
      (await h!.queue.getJob(childEndJobId(triageId, 7)))?.isCompleted(),
    );
    expect(h.notifier.of('final')).toHaveLength(1);
    expect((await h.store.runs.loadRun(runId))?.state.messages).toHaveLength(run.state.messages.length);
  });

  it("a sub-agent's gated call is put to approvers in the thread, naming it; a decision resumes it, then the parent", async () => {
    const model = routedModel({
      root: (results) =>
        results.length === 0
          ? { calls: [{ name: 'ask_ops', args: { task: 'Restart payments' }, id: 'a' }] }
          : { text: `ops said: ${answerOf(results[0])}` },
      ops: (results) =>
        results.length === 0
          ? { calls: [{ name: 'restart', args: { service: 'payments' }, id: 'r' }] }
          : { text: results[0]?.ok ? 'restarted payments' : 'could not restart payments' },
    });
    h = await createHarness({ model, agents: [agent('ops', ['restart'])] });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('please restart payments'));
    const childId = childRunIdFor(runId, 'lg1_0_a');
    await h.waitForStatus(childId, 'awaiting_approval');
    const card = await h.waitFor('the card', () => h!.notifier.of('card')[0]);
    expect(card.runId).toBe(childId);
    expect(card.view).toMatchObject({ agent: 'ops', requesterId: 'UREQ', tool: 'restart' });
    const approvalId = approvalIdFor(childId, 'lg1_0_r');
    expect(card.view.approvalId).toBe(approvalId);
    // The parent waits without a worker, like an approval pause.
    expect((await h.store.runs.loadRun(runId))?.state.status).toBe('awaiting_approval');
    expect(h.executed.filter((e) => e.tool === 'restart')).toEqual([]);
    await h.decide(approvalId, 'approved');
    const run = await h.waitForStatus(runId, 'completed');
    expect(run.state.answer).toEqual(['ops said: restarted payments']);
    expect(h.executed.filter((e) => e.tool === 'restart')).toEqual([
      { tool: 'restart', args: { service: 'payments' }, key: `${childId}:lg1_0_r` },
    ]);
    // The parent knows what its sub-agent did.
    expect(run.state.subagents?.[0]?.actions.map((a) => [a.agent, a.tool, a.outcome])).toEqual([
      ['ops', 'restart', 'succeeded'],
    ]);
  });

  it('a sub-agent that fails is an error result the parent reads, and the parent still answers', async () => {
    const model = routedModel({
      root: (results) =>
        results.length === 0
          ? { calls: [{ name: 'ask_flaky', args: { task: 'x' }, id: 'a' }] }
          : { text: `the sub-agent failed: ${answerOf(results[0])}` },
      flaky: () => ({ throws: new Error('model down') }),
    });
    h = await createHarness({ model, agents: [agent('flaky')] });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('go'));
    const run = await h.waitForStatus(runId, 'completed');
    expect(run.state.answer?.[0]).toMatch(
      /^the sub-agent failed: error subagent_failed: The sub-agent flaky failed \(model_error\)/,
    );
    expect(run.state.subagents?.[0]).toMatchObject({
      agent: 'flaky',
      outcome: 'failed',
      stopReason: 'model_error',
    });
  });

  it('a sub-agent that left the policy since the call is a child born failed, whose error the parent reads', async () => {
    const model = routedModel({
      root: (results) =>
        results.length === 0
          ? { calls: [{ name: 'ask_ghost', args: { task: 'x' }, id: 'a' }] }
          : { text: answerOf(results[0]) },
    });
    // The registry still offers ask_ghost (an older worker's policy), but this worker knows no such agent.
    h = await createHarness({
      model,
      agents: [agent('other')],
      tools: new Map([['ask_ghost', askTool({ name: 'ghost', description: 'gone' })]]),
    });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('go'));
    const run = await h.waitForStatus(runId, 'completed');
    expect(run.state.answer?.[0]).toContain(
      'error subagent_failed: The sub-agent ghost failed (internal_error)',
    );
    expect(run.state.answer?.[0]).toContain('is no longer configured (agents.ghost)');
  });

  it("a child's limits are its agent's budgets capped by what the parent has left, and it is charged back", async () => {
    const model = routedModel({
      root: (results) =>
        results.length === 0
          ? {
              calls: [
                { name: 'ask_big', args: { task: 'x' }, id: 'a' },
                { name: 'ask_small', args: { task: 'y' }, id: 'b' },
              ],
            }
          : { text: 'done' },
      big: () => ({ text: 'big done' }),
      small: () => ({ text: 'small done' }),
    });
    h = await createHarness({
      model,
      agents: [
        agent('big', [], { maxTokens: 1_000_000, maxSteps: 3 }),
        agent('small', [], { maxTokens: 800, maxCostUsd: 0.001, deadlineMs: 5_000 }),
      ],
      limits: { maxTokens: 2_015, maxCostUsd: 1, deadlineMs: 60_000 },
    });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('go'));
    const run = await h.waitForStatus(runId, 'completed');
    const big = await h.store.runs.loadRun(childRunIdFor(runId, 'lg1_0_a'));
    const small = await h.store.runs.loadRun(childRunIdFor(runId, 'lg1_1_b'));
    // 2,015 - 15 tokens left after the first reply, shared by the two children.
    expect(big?.state.limits).toMatchObject({ maxTokens: 1_000, maxSteps: 3, maxCostUsd: 0.5 });
    expect(big?.state.limits.deadlineMs).toBeLessThanOrEqual(60_000);
    expect(small?.state.limits).toMatchObject({
      maxTokens: 800,
      maxCostUsd: 0.001,
      deadlineMs: 5_000,
      maxSteps: 12,
    });
    expect(run.state.usage.inputTokens + run.state.usage.outputTokens).toBe(15 * 4);
  });

  it('refuses delegations deeper than the limit and agents asking themselves through others', async () => {
    const model = routedModel({
      root: (results) =>
        results.length === 0
          ? { calls: [{ name: 'ask_a', args: { task: 'go' }, id: 'x' }] }
          : { text: answerOf(results[0]) },
      a: (results) =>
        results.length === 0
          ? { calls: [{ name: 'ask_b', args: { task: 'go on' }, id: 'y' }] }
          : { text: `a: ${answerOf(results[0])}` },
      b: (results) =>
        results.length === 0
          ? {
              calls: [
                { name: 'ask_a', args: { task: 'cycle' }, id: 'z1' },
                { name: 'ask_c', args: { task: 'deeper' }, id: 'z2' },
              ],
            }
          : { text: results.map((r) => (r.ok ? 'ok' : r.error.code)).join(',') },
      c: () => ({ text: 'never asked' }),
    });
    h = await createHarness({
      model,
      agents: [agent('a', ['ask_b']), agent('b', ['ask_a', 'ask_c']), agent('c')],
    });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('go'));
    const run = await h.waitForStatus(runId, 'completed');
    expect(run.state.answer).toEqual(['a: delegation_refused,delegation_refused']);
    const b = await h.store.runs.loadRun(childRunIdFor(childRunIdFor(runId, 'lg1_0_x'), 'lg1_0_y'));
    const messages = b!.state.messages.filter((m) => m.role === 'tool').map((m) => m.content);
    expect(messages[0]).toContain('a → b → a');
    expect(messages[1]).toContain('3 levels deep; at most 2');
    expect(model.requests.some((r) => String(r.messages[0]?.content ?? '').startsWith('You are C.'))).toBe(
      false,
    );
  });

  it('cancelling the parent cancels its children and their pending approvals', async () => {
    const model = routedModel({
      root: () => ({ calls: [{ name: 'ask_ops', args: { task: 'Restart payments' }, id: 'a' }] }),
      ops: () => ({ calls: [{ name: 'restart', args: { service: 'payments' }, id: 'r' }] }),
    });
    h = await createHarness({ model, agents: [agent('ops', ['restart'])] });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('please restart payments'));
    const childId = childRunIdFor(runId, 'lg1_0_a');
    await h.waitFor('the card', () => h!.notifier.of('card')[0]);
    await h.store.runs.requestCancel(runId, { by: 'UREQ', at: Date.now() });
    await addRunJob(h.queue, { name: 'cancel', data: { v: 1, runId, by: 'UREQ' } });
    const parent = await h.waitForStatus(runId, 'cancelled');
    const child = await h.waitForStatus(childId, 'cancelled');
    expect(parent.state.subagents?.[0]).toMatchObject({
      agent: 'ops',
      outcome: 'abandoned',
      childRunId: childId,
    });
    expect(child.state.stopMessage).toBe('Cancelled by <@UREQ>.');
    const approval = await h.waitFor('the approval to be cancelled', async () => {
      const found = await h!.store.approvals.get(approvalIdFor(childId, 'lg1_0_r'));
      return found?.status === 'cancelled' ? found : null;
    });
    expect(approval.decidedBy).toBe('UREQ');
    await h.waitFor('the card to say cancelled', () =>
      h!.notifier
        .of('update_card')
        .find((u) => u.view.approvalId === approval?.approvalId && u.view.status === 'cancelled'),
    );
    // A decision arriving now runs nothing: the child's run has ended.
    await expect(
      h.store.approvals.decide({
        approvalId: approval.approvalId,
        decision: 'approved',
        decidedBy: 'UMGR',
        now: Date.now(),
      }),
    ).resolves.toMatchObject({ changed: false });
    expect(h.executed.filter((e) => e.tool === 'restart')).toEqual([]);
    await h.waitFor('the parent to tell the thread', () => h!.notifier.of('final').length === 1);
    expect(h.notifier.of('final')[0]?.runId).toBe(runId);
  });

  it('a parent that ends otherwise while its children work (a job that failed for good) cancels them too', async () => {
    const model = routedModel({
      root: () => ({ calls: [{ name: 'ask_ops', args: { task: 'Restart payments' }, id: 'a' }] }),
      ops: () => ({ calls: [{ name: 'restart', args: { service: 'payments' }, id: 'r' }] }),
    });
    h = await createHarness({ model, agents: [agent('ops', ['restart'])] });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('please restart payments'));
    const childId = childRunIdFor(runId, 'lg1_0_a');
    await h.waitFor('the card', () => h!.notifier.of('card')[0]);
    // What the worker does when a job of the run fails its last attempt (run-worker.ts).
    const loaded = (await h.store.runs.loadRun(runId))!;
    const lease = await h.store.leases.acquire(runId, 'test/failure', 5_000);
    if (!lease.acquired) throw new Error('the parent is leased');
    const ended = endRun(
      loaded.state,
      { reason: 'internal_error', message: 'loopgate could not continue this run: boom' },
      { clock: { now: Date.now }, emit: () => {} },
    );
    await h.store.runs.saveStep({ runId, fence: lease.fence, state: ended, persisted: loaded.persisted });
    await h.store.leases.release(runId, lease.fence);
    await deliverEnd(h.runtime('test'), ended, { runId, ...loaded.slack }, null);
    const child = await h.waitForStatus(childId, 'cancelled');
    expect(child.state.stopMessage).toBe('Cancelled by <@loopgate>.');
    await h.waitFor('the approval to be cancelled', async () => {
      const found = await h!.store.approvals.get(approvalIdFor(childId, 'lg1_0_r'));
      return found?.status === 'cancelled';
    });
    expect(h.executed.filter((e) => e.tool === 'restart')).toEqual([]);
  });

  it("a child's end whose hand-over job was lost still reaches the parent by the safety check", async () => {
    const model = routedModel({
      root: (results) =>
        results.length === 0
          ? { calls: [{ name: 'ask_quick', args: { task: 'x' }, id: 'a' }] }
          : { text: `got ${answerOf(results[0])}` },
      quick: () => ({ text: 'quick answer' }),
    });
    h = await createHarness({ model, agents: [agent('quick')], watchMs: 400 });
    const data = h.startJob('go');
    const runId = (await import('../../src/store/ids.js')).runIdForEvent(data.eventId);
    const childId = childRunIdFor(runId, 'lg1_0_a');
    // The hand-over's job id is taken by a job that will not run for an hour: the child's add is ignored.
    await h.queue.add(
      'child_end',
      { v: 1, runId, childRunId: childId },
      { jobId: childEndJobId(childId), delay: 3_600_000 },
    );
    h.startWorker();
    await h.enqueueStart(data);
    await h.waitForStatus(childId, 'completed');
    const run = await h.waitForStatus(runId, 'completed');
    expect(run.state.answer).toEqual(['got quick answer']);
  });
});
