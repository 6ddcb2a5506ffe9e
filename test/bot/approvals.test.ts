import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { resumeJobId } from '../../src/queue/index.js';
import { ACTION_IDS, CALLBACK_IDS, REJECT_REASON_INPUT } from '../../src/slack/ids.js';
import { nextRoundOf } from '../../src/store/index.js';
import { interactivityBody, viewSubmissionPayload } from '../fakes/slack-signing.js';
import { shownText } from '../slack/block-checks.js';
import {
  type BotFixture,
  CHANNEL,
  GROUPIE,
  MANAGER,
  type PendingApproval,
  REQUESTER,
  STRANGER,
  startBotFixture,
} from './bot-fixture.js';

let fx: BotFixture;
let pending: PendingApproval;
beforeEach(async () => {
  fx = await startBotFixture();
  pending = await fx.pendingApproval();
});
afterEach(async () => {
  await fx.cleanup();
});

type Action = 'approve' | 'reject' | 'details' | 'reapprove' | 'fullText';

async function click(user: string, action: Action, overrides: { messageTs?: string; value?: string } = {}) {
  const res = await fx.click({
    user,
    channel: CHANNEL,
    messageTs: overrides.messageTs ?? pending.cardTs,
    threadTs: pending.threadTs,
    action: {
      actionId: ACTION_IDS[action],
      value: overrides.value ?? (action === 'details' ? pending.runId : pending.approvalId),
    },
  });
  expect(res.status).toBe(200);
  await fx.bot.idle();
  return res;
}

const resumeJobs = async () => (await fx.jobs()).filter((job) => job.name === 'resume');
const cardUpdates = () => fx.fake.callsOf('chat.update').filter((c) => c.args.ts === pending.cardTs);
const ephemeralsFor = (user: string) => fx.fake.ephemerals(CHANNEL).filter((e) => e.user === user);
const status = async () => (await fx.store.approvals.get(pending.approvalId))?.status;

/** Asserts that nothing was decided, resumed or redrawn. */
async function expectUnchanged() {
  expect(await status()).toBe('pending');
  expect(await resumeJobs()).toHaveLength(0);
  expect(cardUpdates()).toHaveLength(0);
  expect(await fx.store.audit.recent()).toHaveLength(0);
}

describe('Approve', () => {
  it('by a permitted user: decision recorded and audited, card redrawn in place, resume job queued', async () => {
    await click(MANAGER, 'approve');
    const record = await fx.store.approvals.get(pending.approvalId);
    expect(record).toMatchObject({ status: 'approved', decidedBy: MANAGER });
    const jobs = await resumeJobs();
    expect(jobs.map((j) => [j.id, j.data])).toEqual([
      [resumeJobId(pending.approvalId), { v: 1, runId: pending.runId, approvalId: pending.approvalId }],
    ]);
    const [update] = cardUpdates();
    expect(update?.args.channel).toBe(CHANNEL);
    expect(JSON.stringify(update?.args.blocks)).toContain(`*Approved* by <@${MANAGER}>`);
    expect(JSON.stringify(update?.args.blocks)).not.toContain(ACTION_IDS.approve);
    const card = fx.fake.message(CHANNEL, pending.cardTs);
    expect(card?.edited).toBeDefined();
    const audit = await fx.store.audit.recent();
    expect(audit.map((a) => a.entry)).toEqual([
      expect.objectContaining({
        approvalId: pending.approvalId,
        runId: pending.runId,
        decider: MANAGER,
        decision: 'approved',
        requester: REQUESTER,
        tool: 'http_request',
        argsHash: pending.record.argsHash,
        permalink: expect.stringContaining(`/archives/${CHANNEL}/p`),
      }),
    ]);
    expect(ephemeralsFor(MANAGER)).toHaveLength(0);
  });

  it('by someone who is no approver: an ephemeral saying who may decide, and nothing changes', async () => {
    await click(STRANGER, 'approve');
    await expectUnchanged();
    const [note] = ephemeralsFor(STRANGER);
    expect(note?.thread_ts).toBe(pending.threadTs);
    expect(note?.text).toContain('You may not approve `http_request`');
    expect(note?.text).toContain(`<@${MANAGER}>`);
    expect(note?.text).toContain('<!subteam^S0SRE>');
  });

  it('by the requester, who is an approver too: refused while selfApproval is off', async () => {
    await click(REQUESTER, 'approve');
    await expectUnchanged();
    expect(ephemeralsFor(REQUESTER)[0]?.text).toContain('does not let requesters approve their own calls');
  });

  it('by the requester when selfApproval is on: accepted', async () => {
    await fx.cleanup();
    fx = await startBotFixture({
      policyYaml: `approvals: { approvers: [${REQUESTER}], selfApproval: true }`,
    });
    pending = await fx.pendingApproval();
    await click(REQUESTER, 'approve');
    expect(await status()).toBe('approved');
  });

  it('by a member of an approver user group (usergroups.users.list, cached)', async () => {
    await click(GROUPIE, 'approve');
    expect(await status()).toBe('approved');
    // A second check of the same group (here: a second, stale click) uses the cache.
    await click(GROUPIE, 'approve');
    const lookups = fx.fake.callsOf('usergroups.users.list');
    expect(lookups).toHaveLength(1);
    expect(lookups[0]?.args.usergroup).toBe('S0SRE');
  });

  it('when Slack cannot list the group: refused with a retry hint, nothing changes', async () => {
    fx.fake.failNext('usergroups.users.list', 10, { kind: 'error', error: 'ratelimited_forever' });
    await click(GROUPIE, 'approve');
    await expectUnchanged();
    expect(ephemeralsFor(GROUPIE)[0]?.text).toContain('could not check your user group membership');
  });

  it('the resume job is retried while Redis refuses it; if it never goes through, the approver is told', async () => {
    const add = vi.spyOn(fx.queue, 'add').mockRejectedValue(new Error('Connection is closed.'));
    await click(MANAGER, 'approve');
    expect(add).toHaveBeenCalledTimes(5);
    add.mockRestore();
    expect(await status()).toBe('approved');
    expect(ephemeralsFor(MANAGER)[0]?.text).toContain(
      `could not hand run \`${pending.runId}\` back to a worker`,
    );
  });

  it('a double click executes once: one resume job, and the second click is told it was already approved', async () => {
    await click(MANAGER, 'approve');
    await click(MANAGER, 'approve');
    expect(await resumeJobs()).toHaveLength(1);
    expect(cardUpdates()).toHaveLength(1);
    expect(await fx.store.audit.recent()).toHaveLength(1);
    expect(ephemeralsFor(MANAGER)[0]?.text).toContain(`already approved by <@${MANAGER}>`);
  });

  it('two approvers at once: exactly one decision wins, the other is told who decided', async () => {
    const clicks = Array.from({ length: 4 }, (_, i) => (i % 2 === 0 ? MANAGER : GROUPIE));
    await Promise.all(clicks.map((user) => click(user, 'approve')));
    await fx.bot.idle();
    const record = await fx.store.approvals.get(pending.approvalId);
    expect(record?.status).toBe('approved');
    expect(await fx.store.audit.recent()).toHaveLength(1);
    expect(await resumeJobs()).toHaveLength(1);
    expect(cardUpdates()).toHaveLength(1);
    const told = fx.fake.ephemerals(CHANNEL);
    expect(told).toHaveLength(3);
    for (const note of told) expect(note.text).toContain(`already approved by <@${record?.decidedBy}>`);
  });

  it('the same click delivered twice (a retry) is decided once', async () => {
    const payload = {
      user: MANAGER,
      channel: CHANNEL,
      messageTs: pending.cardTs,
      threadTs: pending.threadTs,
      action: { actionId: ACTION_IDS.approve, value: pending.approvalId },
      triggerId: 'trigger-1',
    };
    await Promise.all([fx.click(payload), fx.click(payload)]);
    await fx.bot.idle();
    expect(await resumeJobs()).toHaveLength(1);
    expect(await fx.store.audit.recent()).toHaveLength(1);
  });

  it('a foreign click (the approval id on another message) is refused and changes nothing', async () => {
    const other = fx.fake.userMessage({ channel: CHANNEL, user: fx.fake.botUserId, text: 'another card' });
    await click(MANAGER, 'approve', { messageTs: other.ts });
    await expectUnchanged();
    expect(ephemeralsFor(MANAGER)[0]?.text).toContain('does not belong to the approval card');
  });

  it('an unknown approval id is refused', async () => {
    await click(MANAGER, 'approve', { value: `${pending.runId}.0123456789abcdef` });
    await click(MANAGER, 'approve', { value: 'not an id' });
    await expectUnchanged();
    const notes = ephemeralsFor(MANAGER).map((e) => e.text);
    expect(notes[0]).toContain('cannot find this approval');
    expect(notes[1]).toContain('does not carry a valid approval id');
  });

  it('a stale click on an approval already rejected says who rejected it, and changes nothing', async () => {
    await fx.store.approvals.decide({
      approvalId: pending.approvalId,
      decision: 'rejected',
      decidedBy: 'U0OTHER',
      reason: 'not now',
      now: Date.now(),
    });
    await click(MANAGER, 'approve');
    expect(await status()).toBe('rejected');
    expect(await resumeJobs()).toHaveLength(0);
    expect(cardUpdates()).toHaveLength(0);
    expect(ephemeralsFor(MANAGER)[0]?.text).toContain('already rejected by <@U0OTHER>');
  });

  it('a click after the expiry is refused as expired and changes nothing', async () => {
    await fx.cleanup();
    fx = await startBotFixture();
    pending = await fx.pendingApproval({ expiresInMs: -1_000 });
    await click(MANAGER, 'approve');
    await expectUnchanged();
    expect(ephemeralsFor(MANAGER)[0]?.text).toContain('expired');
  });
});

/** The run's final save as cancelled, before its approvals are cancelled (the window a click can land in). */
async function endRunLeavingApprovalPending() {
  const lease = await fx.store.leases.acquire(pending.runId, 'ending-worker', 30_000);
  if (!lease.acquired) throw new Error('lease not acquired');
  const loaded = await fx.store.runs.loadRun(pending.runId);
  if (!loaded) throw new Error('run vanished');
  await fx.store.runs.saveStep({
    runId: pending.runId,
    fence: lease.fence,
    state: {
      ...loaded.state,
      status: 'cancelled',
      stopReason: 'cancelled',
      stopMessage: 'Cancelled.',
      updatedAt: Date.now(),
    },
    persisted: loaded.persisted,
  });
}

describe('A click on a run that has ended', () => {
  it('Approve after the run was cancelled, its approval not yet: refused with an ephemeral, no Approved card', async () => {
    await endRunLeavingApprovalPending();
    await click(MANAGER, 'approve');
    await expectUnchanged();
    const [note] = ephemeralsFor(MANAGER);
    expect(note?.thread_ts).toBe(pending.threadTs);
    expect(note?.text).toBe(
      `Run \`${pending.runId}\` has already ended (cancelled, failed or finished), so this \`http_request\` call will not run. Your decision was not recorded.`,
    );
  });
});

describe('A click while Redis fails', () => {
  const redisDown = () =>
    new Error(
      'Reached the max retries per request limit (which is 20). Refer to "maxRetriesPerRequest" option for details.',
    );

  it('Approve whose decision cannot be stored: the clicker is told it was not recorded, the card is untouched', async () => {
    const decide = vi.spyOn(fx.store.approvals, 'decide').mockRejectedValue(redisDown());
    await click(MANAGER, 'approve');
    expect(decide).toHaveBeenCalledTimes(1);
    decide.mockRestore();
    await expectUnchanged();
    const [note] = ephemeralsFor(MANAGER);
    expect(note?.thread_ts).toBe(pending.threadTs);
    expect(note?.text).toBe(
      'Your decision was not recorded (the approval store is unavailable); nothing was changed. Please try again in a moment.',
    );
    // Once Redis answers again, the same click goes through.
    await click(MANAGER, 'approve');
    expect(await status()).toBe('approved');
    expect(JSON.stringify(cardUpdates()[0]?.args.blocks)).toContain(`*Approved* by <@${MANAGER}>`);
  });

  it('Approve whose checks cannot read the approval: told the same, nothing changes', async () => {
    vi.spyOn(fx.store.approvals, 'get').mockRejectedValueOnce(redisDown());
    await click(MANAGER, 'approve');
    await expectUnchanged();
    expect(ephemeralsFor(MANAGER).map((e) => e.text)).toEqual([
      expect.stringContaining('Your decision was not recorded'),
    ]);
  });

  it('a reject reason submitted while the decision cannot be stored: the modal says it was not recorded', async () => {
    await fx.click({
      user: MANAGER,
      channel: CHANNEL,
      messageTs: pending.cardTs,
      threadTs: pending.threadTs,
      action: { actionId: ACTION_IDS.reject, value: pending.approvalId },
      triggerId: 'trigger-reject-down',
    });
    await fx.bot.idle();
    const open = await fx.fake.waitForCall('views.open');
    const view = open.args.view as { private_metadata: string };
    vi.spyOn(fx.store.approvals, 'decide').mockRejectedValue(redisDown());
    const res = await fx.post(
      interactivityBody(
        viewSubmissionPayload(fx.id, {
          user: MANAGER,
          callbackId: CALLBACK_IDS.rejectReason,
          privateMetadata: view.private_metadata,
          values: {
            [REJECT_REASON_INPUT.blockId]: {
              [REJECT_REASON_INPUT.actionId]: { type: 'plain_text_input', value: 'not now' },
            },
          },
        }),
      ),
    );
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).toContain('"response_action":"update"');
    expect(body).toContain('Your decision was not recorded');
    await fx.bot.idle();
    await expectUnchanged();
  });
});

describe('Reject', () => {
  const submit = (user: string, privateMetadata: string, reason: string | null) =>
    fx.post(
      interactivityBody(
        viewSubmissionPayload(fx.id, {
          user,
          callbackId: CALLBACK_IDS.rejectReason,
          privateMetadata,
          values: {
            [REJECT_REASON_INPUT.blockId]: {
              [REJECT_REASON_INPUT.actionId]: { type: 'plain_text_input', value: reason },
            },
          },
        }),
      ),
    );

  it('opens the reason modal with the click trigger; the submission records the reason and resumes the run', async () => {
    await fx.click({
      user: MANAGER,
      channel: CHANNEL,
      messageTs: pending.cardTs,
      threadTs: pending.threadTs,
      action: { actionId: ACTION_IDS.reject, value: pending.approvalId },
      triggerId: 'trigger-reject-1',
    });
    await fx.bot.idle();
    const open = await fx.fake.waitForCall('views.open');
    expect(open.args.trigger_id).toBe('trigger-reject-1');
    const view = open.args.view as { callback_id: string; private_metadata: string };
    expect(view.callback_id).toBe(CALLBACK_IDS.rejectReason);
    // Opening the modal decides nothing yet.
    expect(await status()).toBe('pending');

    const res = await submit(MANAGER, view.private_metadata, '  wait for the deploy freeze to end  ');
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
    await fx.bot.idle();
    expect(await fx.store.approvals.get(pending.approvalId)).toMatchObject({
      status: 'rejected',
      decidedBy: MANAGER,
      decisionReason: 'wait for the deploy freeze to end',
    });
    expect((await resumeJobs()).map((j) => j.id)).toEqual([resumeJobId(pending.approvalId)]);
    expect(JSON.stringify(cardUpdates()[0]?.args.blocks)).toContain('wait for the deploy freeze to end');
    expect((await fx.store.audit.recent())[0]?.entry).toMatchObject({
      decision: 'rejected',
      reason: 'wait for the deploy freeze to end',
    });
  });

  it('by someone who is no approver: no modal, an ephemeral instead', async () => {
    await click(STRANGER, 'reject');
    expect(fx.fake.callsOf('views.open')).toHaveLength(0);
    expect(ephemeralsFor(STRANGER)[0]?.text).toContain('You may not reject');
    await expectUnchanged();
  });

  it('the requester may reject their own call', async () => {
    await click(REQUESTER, 'reject');
    expect(fx.fake.callsOf('views.open')).toHaveLength(1);
  });

  it('a submission after someone else approved is not recorded; the modal says who decided', async () => {
    await click(MANAGER, 'reject');
    const view = (await fx.fake.waitForCall('views.open')).args.view as { private_metadata: string };
    await click(GROUPIE, 'approve');
    const res = await submit(MANAGER, view.private_metadata, 'no');
    const answer = (await res.json()) as { response_action: string; view: { blocks: unknown[] } };
    expect(answer.response_action).toBe('update');
    expect(JSON.stringify(answer.view.blocks)).toContain(`already approved by <@${GROUPIE}>`);
    expect(await status()).toBe('approved');
    expect(await fx.store.audit.recent()).toHaveLength(1);
    expect(await resumeJobs()).toHaveLength(1);
  });

  it('a submission by someone who may not decide is refused', async () => {
    const metadata = JSON.stringify({
      approvalId: pending.approvalId,
      channel: CHANNEL,
      messageTs: pending.cardTs,
    });
    const res = await submit(STRANGER, metadata, 'no');
    expect(((await res.json()) as { response_action: string }).response_action).toBe('update');
    await expectUnchanged();
  });
});

describe('Details and Approve again', () => {
  it('Details opens the trace modal of the run named by the button', async () => {
    await fx.store.runs.appendTrace(pending.runId, [
      {
        type: 'model_replied',
        at: Date.now(),
        runId: pending.runId,
        step: 1,
        durationMs: 1234,
        toolCalls: 1,
      },
    ]);
    await fx.click({
      user: STRANGER,
      channel: CHANNEL,
      messageTs: pending.cardTs,
      threadTs: pending.threadTs,
      action: { actionId: ACTION_IDS.details, value: pending.runId },
      triggerId: 'trigger-details',
    });
    await fx.bot.idle();
    const open = await fx.fake.waitForCall('views.open');
    expect(open.args.trigger_id).toBe('trigger-details');
    expect(open.response?.ok).toBe(true);
    const view = open.args.view as { callback_id: string; blocks: unknown[] };
    expect(view.callback_id).toBe(CALLBACK_IDS.trace);
    const text = JSON.stringify(view.blocks);
    expect(text).toContain(pending.runId);
    expect(text).toContain('http_request');
    expect(text).toContain('1.2 s');
  });

  it('Details of a run of another conversation, or of no run, answers with an ephemeral', async () => {
    await click(MANAGER, 'details', { value: 'r-does-not-exist' });
    const elsewhere = await fx.pendingApproval({ channel: 'C0ELSEWHERE' });
    await click(MANAGER, 'details', { value: elsewhere.runId });
    expect(fx.fake.callsOf('views.open')).toHaveLength(0);
    const notes = ephemeralsFor(MANAGER).map((e) => e.text);
    expect(notes[0]).toContain('cannot find this run');
    expect(notes[1]).toContain('another conversation');
  });
});

/** The pending approval, approved by `voters`, begun by a worker that died: its outcome is unknown. */
async function leftUnknown(voters: readonly string[] = [MANAGER]) {
  for (const voter of voters) {
    await fx.store.approvals.decide({
      approvalId: pending.approvalId,
      decision: 'approved',
      decidedBy: voter,
      now: Date.now(),
    });
  }
  const lease = await fx.store.leases.acquire(pending.runId, 'dead-worker', 30_000);
  if (!lease.acquired) throw new Error('lease not acquired');
  const { approvalId } = pending;
  await fx.store.ledger.begin({
    approvalId,
    fence: lease.fence,
    argsHash: pending.record.argsHash,
    now: Date.now(),
  });
  await fx.store.ledger.markOutcomeUnknown(approvalId, lease.fence, Date.now());
  await fx.store.leases.release(pending.runId, lease.fence);
}

describe('Approve again (after an unknown outcome)', () => {
  it('by an approver: the next round is approved and audited, the card redrawn, its resume job queued', async () => {
    await leftUnknown();
    await click(GROUPIE, 'reapprove');
    const next = nextRoundOf(pending.approvalId);
    expect(await fx.store.approvals.get(next)).toMatchObject({
      status: 'approved',
      decidedBy: GROUPIE,
      argsHash: pending.record.argsHash,
      card: { channel: CHANNEL, ts: pending.cardTs },
    });
    const jobs = await resumeJobs();
    expect(jobs.map((j) => [j.id, j.data])).toEqual([
      [resumeJobId(next), { v: 1, runId: pending.runId, approvalId: next }],
    ]);
    const blocks = JSON.stringify(cardUpdates().at(-1)?.args.blocks);
    expect(blocks).toContain(`*Approved* by <@${GROUPIE}>`);
    expect(blocks).toContain('approved again after an unknown outcome');
    expect(blocks).not.toContain(ACTION_IDS.reapprove);
    const audit = await fx.store.audit.recent();
    expect(audit[0]?.entry).toMatchObject({ approvalId: next, decider: GROUPIE, decision: 'approved' });
    expect(ephemeralsFor(GROUPIE)).toHaveLength(0);
  });

  it('a second click, by anyone, is told it was already approved again; one job, one round', async () => {
    await leftUnknown();
    await click(GROUPIE, 'reapprove');
    await click(MANAGER, 'reapprove');
    expect(ephemeralsFor(MANAGER)[0]?.text).toContain(`already approved again by <@${GROUPIE}>`);
    expect(await resumeJobs()).toHaveLength(1);
    expect(await fx.store.approvals.get(nextRoundOf(nextRoundOf(pending.approvalId)))).toBeNull();
  });

  it('is refused to someone who may not approve, and to the requester while selfApproval is off', async () => {
    await leftUnknown();
    await click(STRANGER, 'reapprove');
    await click(REQUESTER, 'reapprove');
    expect(ephemeralsFor(STRANGER)[0]?.text).toContain('You may not approve `http_request`');
    expect(ephemeralsFor(REQUESTER)[0]?.text).toContain('does not let requesters approve their own calls');
    expect(await fx.store.approvals.get(nextRoundOf(pending.approvalId))).toBeNull();
    expect(await resumeJobs()).toHaveLength(0);
  });

  it('needs the quorum of the first run: one click of a two-approver call runs nothing', async () => {
    pending = await fx.pendingApproval({ policy: { quorum: 2 } });
    await leftUnknown([MANAGER, GROUPIE]);
    await click(GROUPIE, 'reapprove');
    const next = nextRoundOf(pending.approvalId);
    expect(await fx.store.approvals.get(next)).toMatchObject({
      status: 'pending',
      quorum: 2,
      votes: [expect.objectContaining({ by: GROUPIE })],
    });
    expect(await fx.store.ledger.get(next)).toBeNull();
    expect(await resumeJobs()).toHaveLength(0);
    expect(ephemeralsFor(GROUPIE)[0]?.text).toContain('it needs 2 different approvers');
    await click(GROUPIE, 'reapprove');
    expect(ephemeralsFor(GROUPIE)[1]?.text).toContain('You have already approved running this again');
    expect(await resumeJobs()).toHaveLength(0);

    await click(MANAGER, 'reapprove');
    expect(await fx.store.approvals.get(next)).toMatchObject({ status: 'approved', decidedBy: MANAGER });
    expect((await resumeJobs()).map((j) => j.id)).toEqual([resumeJobId(next)]);
  });

  it('on a call whose outcome is not unknown (a forged click on a pending card) changes nothing', async () => {
    await click(MANAGER, 'reapprove');
    expect(ephemeralsFor(MANAGER)[0]?.text).toContain('nothing to approve again');
    await expectUnchanged();
  });
});

describe('Full text', () => {
  it('opens every character of a long argument, harmful tail included, to anyone in the card’s channel', async () => {
    const body = `${'padding '.repeat(500)}THEN DROP TABLE payments`;
    pending = await fx.pendingApproval({ args: { method: 'POST', url: 'https://x.example/', body } });
    await click(STRANGER, 'fullText');
    const open = await fx.fake.waitForCall('views.open');
    const view = open.args.view as { callback_id: string; blocks: unknown[] };
    expect(view.callback_id).toBe(CALLBACK_IDS.fullText);
    const shown = JSON.stringify(view.blocks);
    expect(shown).toContain('THEN DROP TABLE payments');
    expect(shownText(view.blocks)).toContain(`body: ${body}`);
    await expectUnchanged();
  });

  it('from a message in another channel: ignored with a note, no modal', async () => {
    await fx.click({
      user: MANAGER,
      channel: 'C0ELSEWHERE',
      messageTs: pending.cardTs,
      action: { actionId: ACTION_IDS.fullText, value: pending.approvalId },
    });
    await fx.bot.idle();
    expect(fx.fake.callsOf('views.open')).toHaveLength(0);
    expect(fx.fake.ephemerals('C0ELSEWHERE')[0]?.text).toContain('belongs to a card of another conversation');
  });
});
