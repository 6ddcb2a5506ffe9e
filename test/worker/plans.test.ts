/**
 * Plans bound to the decision, on the worker's side, with real Redis and BullMQ: the plan is stored with
 * the approval and shown on the card; a plan that changed between approval and execution stops the call
 * and asks again in a fresh round (card redrawn in place, with the difference); the second approval runs
 * it; a plan that fails blocks it and its card says why; the ledger records both plans.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/loop/define-tool.js';
import { argsHash } from '../../src/loop/hash.js';
import { planHash } from '../../src/loop/plan.js';
import type { AnyTool } from '../../src/loop/tool-contract.js';
import { addRunJob } from '../../src/queue/runs-queue.js';
import { nextRoundOf } from '../../src/store/ids.js';
import { call, scriptedModel } from '../support/engine.js';
import { createHarness } from '../support/worker-harness.js';

type Harness = Awaited<ReturnType<typeof createHarness>>;
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** The cluster as the rollout's dry-run sees it now; `null` makes the dry-run fail. */
const world: { replicas: number | null } = { replicas: 3 };
const ran: unknown[] = [];

const rollout: AnyTool = defineTool({
  name: 'rollout',
  description: 'Roll out a version of web',
  parameters: z.object({ version: z.string() }),
  effect: 'write',
  async execute(args) {
    ran.push(args);
    return { rolled: args.version };
  },
  async plan(args) {
    if (world.replicas === null) throw new Error('dry-run: the API server refused the connection');
    return `deployment/web: ${world.replicas} pods\nimage: web:${args.version}`;
  },
});

async function pausedRollout() {
  ran.length = 0;
  world.replicas = 3;
  h = await createHarness({
    model: scriptedModel([{ calls: [call('rollout', { version: '2.0' })] }, { text: 'Rolled out.' }]),
    tools: new Map([['rollout', rollout]]),
  });
  h.startWorker();
  const runId = await h.enqueueStart(h.startJob('roll out web 2.0'));
  const card = await h.waitFor('card', () => h!.notifier.of('card')[0]);
  return { runId, card, approvalId: card.view.approvalId };
}

const PLAN_3 = 'deployment/web: 3 pods\nimage: web:2.0';
const PLAN_5 = 'deployment/web: 5 pods\nimage: web:2.0';

describe('plans on the worker', () => {
  it('shows the plan on the card and stores it with the approval; an unchanged plan runs', async () => {
    const { runId, card, approvalId } = await pausedRollout();
    expect(card.view.plan).toEqual({ ok: true, text: PLAN_3, hash: planHash(PLAN_3) });
    expect((await h!.store.approvals.get(approvalId))?.plan).toEqual(card.view.plan);
    await h!.decide(approvalId, 'approved');
    await h!.waitForStatus(runId, 'completed');
    expect(ran).toEqual([{ version: '2.0' }]);
    const entry = await h!.store.ledger.get(approvalId);
    expect(entry).toMatchObject({
      status: 'succeeded',
      approvedPlanHash: planHash(PLAN_3),
      currentPlanHash: planHash(PLAN_3),
    });
  });

  it('a plan that changed after approval stops execution and asks again; the new approval runs it', async () => {
    const { runId, approvalId } = await pausedRollout();
    world.replicas = 5;
    await h!.decide(approvalId, 'approved');
    const next = nextRoundOf(approvalId);
    const redrawn = await h!.waitFor('the card asking again', () =>
      h!.notifier.of('update_card').find((u) => u.view.approvalId === next),
    );
    expect(ran).toEqual([]);
    expect(redrawn.view.status).toBe('pending');
    expect(redrawn.view.plan).toMatchObject({ ok: true, text: PLAN_5 });
    expect(redrawn.view.planChanged?.before).toMatchObject({ ok: true, text: PLAN_3 });
    const [first, second] = await Promise.all([
      h!.store.approvals.get(approvalId),
      h!.store.approvals.get(next),
    ]);
    expect(first).toMatchObject({ status: 'superseded', editedTo: next, decidedBy: 'UMGR' });
    expect(second).toMatchObject({ status: 'pending', decidedBy: null, replanOf: { approvalId } });
    expect(second?.votes).toBeUndefined();
    expect(await h!.store.ledger.get(approvalId)).toMatchObject({
      status: 'plan_blocked',
      approvedPlanHash: planHash(PLAN_3),
      currentPlanHash: planHash(PLAN_5),
    });
    expect((await h!.store.runs.loadRun(runId))?.state.status).toBe('awaiting_approval');

    await h!.decide(next, 'approved');
    await h!.waitForStatus(runId, 'completed');
    expect(ran).toEqual([{ version: '2.0' }]);
    expect(await h!.store.ledger.get(next)).toMatchObject({
      status: 'succeeded',
      approvedPlanHash: planHash(PLAN_5),
      currentPlanHash: planHash(PLAN_5),
    });
  });

  it('a plan that fails before execution blocks it: not run, the card says why, the model is told', async () => {
    const { runId, approvalId } = await pausedRollout();
    world.replicas = null;
    await h!.decide(approvalId, 'approved');
    const run = await h!.waitForStatus(runId, 'completed');
    expect(ran).toEqual([]);
    const blocked = await h!.waitFor('the card saying why', () =>
      h!.notifier.of('update_card').find((u) => u.view.outcome?.includes('could not be computed')),
    );
    expect(blocked.view.outcome).toContain('the API server refused the connection');
    const result = run.state.messages.find((m) => m.role === 'tool');
    expect(JSON.parse(String(result?.content)).error.code).toBe('plan_failed');
    expect(await h!.store.ledger.get(approvalId)).toMatchObject({
      status: 'plan_blocked',
      approvedPlanHash: planHash(PLAN_3),
    });
    expect((await h!.store.ledger.get(approvalId))?.currentPlanHash).toBeUndefined();
  });

  it('an edit re-plans: the edited arguments are asked again with their own plan, then run', async () => {
    const { runId, approvalId } = await pausedRollout();
    const record = (await h!.store.approvals.get(approvalId))!;
    const args = { version: '2.1' };
    const now = Date.now();
    // The bot's edit: the next round, approved by the editor, without a plan for the edited arguments.
    const edited = await h!.store.approvals.edit({
      approvalId,
      editedBy: 'UMGR',
      now,
      next: {
        ...record,
        approvalId: nextRoundOf(approvalId),
        args,
        argsHash: argsHash(args),
        preview: null,
        plan: undefined,
        status: 'approved',
        decidedBy: 'UMGR',
        decidedAt: now,
        decisionReason: 'edited',
        card: null,
        original: { args: record.args, argsHash: record.argsHash },
        editedBy: 'UMGR',
        editOf: approvalId,
      },
    });
    await addRunJob(h!.queue, { name: 'resume', data: { v: 1, runId, approvalId: edited.approvalId } });
    const third = nextRoundOf(edited.approvalId);
    const asked = await h!.waitFor('the edited call asked again with its plan', () =>
      h!.notifier.of('update_card').find((u) => u.view.approvalId === third),
    );
    expect(ran).toEqual([]);
    expect(asked.view.plan).toMatchObject({ ok: true, text: 'deployment/web: 3 pods\nimage: web:2.1' });
    expect(asked.view.args).toEqual(args);
    await h!.decide(third, 'approved');
    await h!.waitForStatus(runId, 'completed');
    expect(ran).toEqual([args]);
  });
});
