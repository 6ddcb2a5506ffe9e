/**
 * Quorum clicks through the real bot: the card shows progress and keeps its buttons for the others, the
 * same approver twice does not count, the requester does not count, the Nth approval decides and queues
 * the resume once, a single Reject rejects.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ACTION_IDS } from '../../src/slack/ids.js';
import {
  type BotFixture,
  CHANNEL,
  DEFAULT_POLICY,
  GROUP,
  GROUPIE,
  MANAGER,
  type PendingApproval,
  REQUESTER,
  startBotFixture,
} from './bot-fixture.js';

let fx: BotFixture;
let pending: PendingApproval;
beforeEach(async () => {
  // The rule the card records is the policy's: a click is judged by the rule in force (invariant 9).
  fx = await startBotFixture({
    policyYaml: `${DEFAULT_POLICY}
  http_request: { allow: ["https://deploy.internal.example/"], approvers: [${MANAGER}] }
rules:
  http_request:
    - name: staging
      when: { url: { glob: "*/staging/*" } }
      outcome: ask
    - name: prod
      when: { url: { glob: "*/api/restart/*" } }
      outcome: ask
      approvers: [${MANAGER}, ${REQUESTER}, U0LEAD, ${GROUP}]
      quorum: 2
`,
  });
  pending = await fx.pendingApproval({
    approvers: { users: [MANAGER, REQUESTER, 'U0LEAD'], groups: [GROUP] },
    policy: { quorum: 2, rule: 'rule 2 of http_request (prod)', selfApproval: false },
  });
});
afterEach(async () => {
  await fx.cleanup();
});

async function approve(user: string) {
  const res = await fx.click({
    user,
    channel: CHANNEL,
    messageTs: pending.cardTs,
    threadTs: pending.threadTs,
    action: { actionId: ACTION_IDS.approve, value: pending.approvalId },
  });
  expect(res.status).toBe(200);
  await fx.bot.idle();
}

const resumeJobs = async () => (await fx.jobs()).filter((job) => job.name === 'resume');
const lastCard = () =>
  JSON.stringify(
    fx.fake
      .callsOf('chat.update')
      .filter((c) => c.args.ts === pending.cardTs)
      .at(-1)?.args.blocks,
  );
const notesTo = (user: string) =>
  fx.fake
    .ephemerals(CHANNEL)
    .filter((e) => e.user === user)
    .map((e) => e.text);

describe('quorum 2', () => {
  it('the first approval shows progress and keeps the buttons; a repeat and the requester do not count; the second decides', async () => {
    await approve(MANAGER);
    expect((await fx.store.approvals.get(pending.approvalId))?.status).toBe('pending');
    expect(await resumeJobs()).toEqual([]);
    expect(lastCard()).toContain(`*Approvals:* 1 of 2: <@${MANAGER}>`);
    expect(lastCard()).toContain(ACTION_IDS.approve);
    expect(lastCard()).toContain('Policy: rule 2 of http_request (prod)');
    expect(notesTo(MANAGER)).toEqual([expect.stringContaining('Your approval is recorded: 1 of 2')]);

    await approve(MANAGER);
    expect(notesTo(MANAGER)[1]).toContain('You have already approved this');
    await approve(REQUESTER);
    expect(notesTo(REQUESTER)).toEqual([
      expect.stringContaining('does not let requesters approve their own calls'),
    ]);
    const record = await fx.store.approvals.get(pending.approvalId);
    expect(record?.status).toBe('pending');
    expect(record?.votes?.map((v) => v.by)).toEqual([MANAGER]);
    expect(await resumeJobs()).toEqual([]);

    await approve(GROUPIE);
    expect(await fx.store.approvals.get(pending.approvalId)).toMatchObject({
      status: 'approved',
      decidedBy: GROUPIE,
    });
    expect((await resumeJobs()).map((j) => j.data.approvalId)).toEqual([pending.approvalId]);
    expect(lastCard()).toContain(`*Approved* by <@${MANAGER}> and <@${GROUPIE}>`);
    expect(lastCard()).not.toContain(ACTION_IDS.approve);
    expect(await fx.store.ledger.get(pending.approvalId)).toMatchObject({ status: 'approved' });
  });

  it('concurrent approvals by three people decide once and queue one resume', async () => {
    await Promise.all([approve(MANAGER), approve(GROUPIE), approve('U0LEAD')]);
    expect((await fx.store.approvals.get(pending.approvalId))?.status).toBe('approved');
    expect(await resumeJobs()).toHaveLength(1);
    const told = [...notesTo(MANAGER), ...notesTo(GROUPIE), ...notesTo('U0LEAD')];
    // One was counted first (told 1 of 2), one completed it (told nothing), one came after (already approved).
    expect(told).toEqual(
      expect.arrayContaining([
        expect.stringContaining('1 of 2'),
        expect.stringContaining('already approved'),
      ]),
    );
  });
});
