/**
 * Shadow mode through the real worker and Redis: a gated call in shadow mode is not executed and the run
 * does not wait for it; its approval is closed at once (via shadow) with no ledger entry, its card is marked
 * "Shadow: this will not run", the model reads that it was not executed, and a final answer claiming it
 * ran is refused. A deny rule still denies; channels.shadow shadows any tool asked from that channel.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parsePolicy } from '../../src/config/policy.js';
import { shadowReason } from '../../src/config/shadow-mode.js';
import { decideGate } from '../../src/policy/gate.js';
import { approvalCard, SHADOW_HEADER } from '../../src/slack/approval-card.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { AWAITING_APPROVAL_TEXT } from '../../src/slack/progress.js';
import { call, scriptedModel } from '../support/engine.js';
import { createHarness } from '../support/worker-harness.js';

let h: Awaited<ReturnType<typeof createHarness>> | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const policyOf = (yaml: string) => {
  const policy = parsePolicy(yaml, { env: {} });
  return {
    gate: (tool: string, args: unknown) => decideGate(policy, tool, args),
    shadow: (tool: string, channelId: string) => shadowReason(policy, tool, channelId),
  };
};

const RULES = `
rules:
  restart:
    - { name: search restarts, when: { service: search }, outcome: allow }
    - { when: { service: payments }, outcome: deny, reason: never restart payments }
`;

const toolResults = (messages: { role: string; content?: string | null }[]) =>
  messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content ?? 'null'));

describe('shadow mode in the worker', () => {
  it('approvals.mode shadow: nothing runs, no ledger entry, a shadow card, the model told at once, a false claim refused', async () => {
    h = await createHarness({
      model: scriptedModel([
        { calls: [call('restart', { service: 'payments' })] },
        { text: 'Restarted payments.' },
        { text: 'The restart of payments was not executed (shadow mode).' },
      ]),
      ...policyOf(
        `approvals: { approvers: [UMGR], mode: shadow }\ncustom:\n  - { path: ./r.ts, name: restart }`,
      ),
    });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('restart payments'));
    // Completes without anyone deciding: the run never waits on a shadow call.
    const run = await h.waitForStatus(runId, 'completed');
    expect(h.executed).toEqual([]);
    const [approval] = await h.store.approvals.listForRun(runId);
    expect(approval).toMatchObject({
      status: 'rejected',
      via: 'shadow',
      decidedBy: null,
      decisionReason: 'shadow mode (approvals.mode is shadow): not executed',
      approvers: { users: ['UMGR'], groups: [] },
    });
    expect(approval?.card).not.toBeNull();
    expect(await h.store.ledger.get(approval!.approvalId)).toBeNull();
    const [card] = h.notifier.of('card');
    expect(card?.view.shadow).toMatchObject({ why: 'approvals.mode is shadow' });
    const blocks = JSON.stringify(approvalCard(card!.view).blocks);
    expect(blocks).toContain(SHADOW_HEADER);
    expect(blocks).toContain(ACTION_IDS.wouldApprove);
    expect(blocks).toContain(ACTION_IDS.wouldReject);
    expect(blocks).not.toContain(`"${ACTION_IDS.approve}"`);
    const [result] = toolResults(run.state.messages);
    expect(result).toMatchObject({ ok: false, error: { code: 'shadow_mode' } });
    expect(result.error.message).toContain('Not executed: restart was not run (shadow mode');
    expect(run.state.actions).toEqual([
      expect.objectContaining({ tool: 'restart', outcome: 'rejected', reason: approval?.decisionReason }),
    ]);
    // "Restarted payments." is refused by the final-answer check; the corrected answer is delivered.
    expect(run.state.answer?.join('')).toBe('The restart of payments was not executed (shadow mode).');
    const [audit] = await h.store.audit.recent();
    expect(audit?.entry).toMatchObject({ event: 'shadow', decision: '', via: 'shadow' });
    // The run never said it was waiting for anyone.
    expect(h.notifier.of('progress').map((p) => p.text)).not.toContain(AWAITING_APPROVAL_TEXT);
  });

  it('an allow rule in shadow mode does not run the call either; a deny rule still denies, without a card', async () => {
    h = await createHarness({
      model: scriptedModel([
        { calls: [call('restart', { service: 'search' }), call('restart', { service: 'payments' })] },
        { text: 'Neither restart was executed.' },
      ]),
      ...policyOf(
        `approvals: { approvers: [UMGR], trusted: [restart] }\ncustom:\n  - { path: ./r.ts, name: restart, mode: shadow }\n${RULES}`,
      ),
    });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('restart search and payments'));
    const run = await h.waitForStatus(runId, 'completed');
    expect(h.executed).toEqual([]);
    const approvals = await h.store.approvals.listForRun(runId);
    const search = approvals.find((a) => (a.args as { service: string }).service === 'search');
    const ledger = approvals.find((a) => (a.args as { service: string }).service === 'payments');
    expect(search).toMatchObject({ via: 'shadow', rule: 'rule 1 of restart (search restarts)' });
    expect(ledger).toMatchObject({ status: 'rejected', via: 'rule' });
    for (const a of approvals) expect(await h.store.ledger.get(a.approvalId)).toBeNull();
    expect(h.notifier.of('card').map((c) => c.view.approvalId)).toEqual([search?.approvalId]);
    expect(toolResults(run.state.messages).map((r) => r.error.code)).toEqual(['shadow_mode', 'rejected']);
  });

  it('shadow mode never offers break glass: a break-glass deny rule denies without a card, other cards have no Break glass', async () => {
    h = await createHarness({
      model: scriptedModel([
        { calls: [call('restart', { service: 'payments' }), call('restart', { service: 'search' })] },
        { text: 'Neither restart was executed.' },
      ]),
      ...policyOf(
        `approvals: { approvers: [UMGR], mode: shadow }\ncustom:\n  - { path: ./r.ts, name: restart }
rules:
  restart:
    - when: { service: payments }
      outcome: deny
      reason: never restart payments
      breakGlass: { approvers: [ULEAD] }
`,
      ),
    });
    h.startWorker();
    const runId = await h.enqueueStart(h.startJob('restart payments and search'));
    const run = await h.waitForStatus(runId, 'completed');
    expect(h.executed).toEqual([]);
    const approvals = await h.store.approvals.listForRun(runId);
    const payments = approvals.find((a) => (a.args as { service: string }).service === 'payments');
    const search = approvals.find((a) => (a.args as { service: string }).service === 'search');
    expect(payments).toMatchObject({ status: 'rejected', via: 'rule' });
    expect(payments?.breakGlass).toBeUndefined();
    expect(search).toMatchObject({ status: 'rejected', via: 'shadow' });
    const cards = h.notifier.of('card');
    expect(cards.map((c) => c.view.approvalId)).toEqual([search?.approvalId]);
    const blocks = JSON.stringify(approvalCard(cards[0]!.view).blocks);
    expect(blocks).toContain(ACTION_IDS.wouldApprove);
    expect(blocks).not.toContain(`"${ACTION_IDS.breakGlass}"`);
    expect(toolResults(run.state.messages).map((r) => r.error.code)).toEqual(['rejected', 'shadow_mode']);
  });

  it('channels.shadow shadows a call asked from that channel; the same call from another channel waits for a person', async () => {
    const policy = policyOf(`approvals: { approvers: [UMGR] }\nchannels: { shadow: [C0SHADOW] }`);
    h = await createHarness({
      model: scriptedModel([
        { calls: [call('restart', { service: 'payments' })] },
        { text: 'Not executed: shadow mode.' },
        { calls: [call('restart', { service: 'payments' })] },
      ]),
      ...policy,
    });
    h.startWorker();
    const shadowed = await h.enqueueStart(h.startJob('restart payments', { channelId: 'C0SHADOW' }));
    await h.waitForStatus(shadowed, 'completed');
    const other = await h.enqueueStart(h.startJob('restart payments', { channelId: 'C0OTHER' }));
    await h.waitForStatus(other, 'awaiting_approval');
    const [pending] = await h.store.approvals.listForRun(other);
    expect(pending).toMatchObject({ status: 'pending' });
    expect(pending?.via).toBeUndefined();
    expect(h.executed).toEqual([]);
  });
});
