/**
 * Policy rules through the real worker and Redis: an allow rule runs the call without a card, through the
 * execution ledger, audited as allowed by the rule; a deny rule runs nothing and the model reads why; an
 * ask rule's approvers and quorum are stored on the approval its card shows.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parsePolicy } from '../../src/config/policy.js';
import { decideGate } from '../../src/policy/gate.js';
import { call, scriptedModel } from '../support/engine.js';
import { createHarness } from '../support/worker-harness.js';

let h: Awaited<ReturnType<typeof createHarness>> | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const policy = parsePolicy(
  `
approvals: { approvers: [UMGR], trusted: [restart] }
custom:
  - { path: ./restart.ts, name: restart }
  - { path: ./announce.ts, name: announce }
rules:
  restart:
    - name: search restarts
      when: { service: search }
      outcome: allow
    - when: { service: payments }
      outcome: ask
      approvers: [ULEADA, ULEADB]
      quorum: 2
  announce:
    - when: { text: { regex: "(?i)password" } }
      outcome: deny
      reason: never post credentials
`,
  { env: {} },
);
const gate = (tool: string, args: unknown) => decideGate(policy, tool, args);

const lastToolResult = (messages: { role: string; content?: string | null }[]) =>
  JSON.parse(messages.filter((m) => m.role === 'tool').at(-1)?.content ?? 'null');

describe('policy rules in the worker', () => {
  it('an allow rule runs the call once, without a card, through the ledger, audited as allowed by the rule', async () => {
    h = await createHarness({
      model: scriptedModel([
        { calls: [call('restart', { service: 'search' })] },
        { text: 'Restarted search.' },
      ]),
      gate,
    });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('restart search'));
    const run = await h.waitForStatus(runId, 'completed');
    expect(h.executed.filter((e) => e.tool === 'restart')).toEqual([
      expect.objectContaining({ args: { service: 'search' } }),
    ]);
    expect(h.notifier.of('card')).toEqual([]);
    expect(lastToolResult(run.state.messages)).toMatchObject({ ok: true, data: { restarted: 'search' } });
    const [approval] = await h.store.approvals.listForRun(runId);
    expect(approval).toMatchObject({
      status: 'approved',
      via: 'rule',
      rule: 'rule 1 of restart (search restarts)',
      decidedBy: null,
      decisionReason: 'allowed by rule 1 of restart (search restarts)',
    });
    expect((await h.store.ledger.get(approval!.approvalId))?.status).toBe('succeeded');
    const [audit] = await h.store.audit.recent();
    expect(audit?.entry).toMatchObject({
      decision: 'approved',
      via: 'rule',
      rule: 'rule 1 of restart (search restarts)',
      reason: 'allowed by rule 1 of restart (search restarts)',
      decider: '',
    });
  });

  it('a deny rule runs nothing; the model reads the reason and an identical call is refused without asking', async () => {
    const model = scriptedModel([
      { calls: [call('announce', { text: 'the password is hunter2' })] },
      { calls: [call('announce', { text: 'the password is hunter2' })] },
      { text: 'I will not post credentials.' },
    ]);
    h = await createHarness({ model, gate });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('post the password'));
    const run = await h.waitForStatus(runId, 'completed');
    expect(h.executed.filter((e) => e.tool === 'announce')).toEqual([]);
    expect(h.notifier.of('card')).toEqual([]);
    const results = run.state.messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content));
    expect(results[0]).toEqual({
      ok: false,
      error: {
        code: 'rejected',
        message:
          'Not executed: announce was rejected: denied by rule 1 of announce: never post credentials. Do not retry it unless the user asks you to.',
      },
    });
    expect(results[1]).toMatchObject({ ok: false, error: { code: 'rejected_before' } });
    const [audit] = await h.store.audit.recent();
    expect(audit?.entry).toMatchObject({ decision: 'rejected', via: 'rule', rule: 'rule 1 of announce' });
  });

  it('an ask rule stores its approvers and quorum on the approval, and its card shows them', async () => {
    h = await createHarness({
      model: scriptedModel([{ calls: [call('restart', { service: 'payments' })] }, { text: 'done' }]),
      gate,
    });
    h.startWorker();
    await h.enqueueStart(h.startJob('restart payments'));
    const card = await h.waitFor('card', () => h!.notifier.of('card')[0]);
    expect(card.view).toMatchObject({
      approvers: { users: ['ULEADA', 'ULEADB'], groups: [] },
      status: 'pending',
    });
    expect(await h.store.approvals.get(card.view.approvalId)).toMatchObject({
      quorum: 2,
      rule: 'rule 2 of restart',
      selfApproval: false,
      schema: expect.objectContaining({ type: 'object' }),
    });
    expect(h.executed.filter((e) => e.tool === 'restart')).toEqual([]);
  });
});

describe('reminders, escalation and expiry', () => {
  it('reminds the thread, then escalates, then expires; the model is told nothing ran and may not promise it', async () => {
    const model = scriptedModel([
      { calls: [call('restart', { service: 'payments' })] },
      { text: 'The restart will run once someone approves it.' },
      { text: 'Nobody approved the restart in time, so it did not happen.' },
    ]);
    h = await createHarness({
      model,
      gate: () => ({
        kind: 'ask',
        rule: { index: 0, label: 'rule 1 of restart' },
        approvers: { users: ['UMGR'], groups: [] },
        quorum: 1,
        selfApproval: false,
        expiresAfterMs: 2_400,
        remindAtPercent: [25],
        escalation: { to: { users: ['ULEAD'], groups: ['S0ONCALL'] }, afterMs: 1_200 },
        grant: null,
      }),
    });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('restart payments'));
    const run = await h.waitForStatus(runId, 'completed', 20_000);

    const notes = h.notifier.of('note').map((n) => n.text);
    expect(notes).toEqual([
      expect.stringMatching(
        /^:alarm_clock: Reminder: `restart` is still waiting for a decision\. <@UMGR>: please approve or reject it/,
      ),
      expect.stringMatching(
        /^:arrow_double_up: Escalated: nobody has decided on `restart` yet\. <@ULEAD>, <!subteam\^S0ONCALL>: you may now approve or reject it too/,
      ),
    ]);
    const updates = h.notifier.of('update_card').map((u) => u.view);
    expect(updates.map((v) => v.status)).toEqual(['pending', 'expired']);
    expect(updates[0]?.approvers).toEqual({ users: ['UMGR', 'ULEAD'], groups: ['S0ONCALL'] });

    const result = run.state.messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content))[0];
    expect(result).toMatchObject({ ok: false, error: { code: 'expired' } });
    expect(result.error.message).toContain('it did not run and it will not run later');
    // The first answer promised the restart; it went back to the model, and the honest one was posted.
    expect(model.requests).toHaveLength(3);
    expect(JSON.stringify(model.requests[2]?.messages.at(-1))).toContain('will not run');
    expect(run.state.answer).toEqual(['Nobody approved the restart in time, so it did not happen.']);
    expect(h.executed.filter((e) => e.tool === 'restart')).toEqual([]);

    const events = (await h.store.audit.recent(10)).map((a) => [a.entry.event, a.entry.decision]).reverse();
    expect(events).toEqual([
      ['reminder', ''],
      ['escalation', ''],
      ['decision', 'expired'],
    ]);
  });
});
