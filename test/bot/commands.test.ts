import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { childRunIdFor } from '../../src/loop/delegate.js';
import type { RunState } from '../../src/loop/run-state.js';
import { createRun } from '../../src/loop/state.js';
import { cancelJobId } from '../../src/queue/index.js';
import { eventBody, eventEnvelope } from '../fakes/slack-signing.js';
import {
  type BotFixture,
  CHANNEL,
  GROUP,
  GROUPIE,
  MANAGER,
  REQUESTER,
  STRANGER,
  startBotFixture,
} from './bot-fixture.js';

let fx: BotFixture;
beforeEach(async () => {
  fx = await startBotFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

interface Answer {
  response_type: string;
  text: string;
  blocks: Array<{ text?: { text: string } }>;
}

async function command(user: string, text: string, channel = CHANNEL): Promise<Answer> {
  const res = await fx.command(user, text, channel);
  expect(res.status).toBe(200);
  const answer = (await res.json()) as Answer;
  expect(answer.response_type).toBe('ephemeral');
  return answer;
}

describe('/loopgate', () => {
  it('help, an empty command and an unknown subcommand all answer with the help text', async () => {
    for (const text of ['help', '', 'frobnicate now']) {
      const answer = await command(STRANGER, text);
      expect(answer.text).toContain('`/loopgate status`');
      expect(answer.text).toContain('`/loopgate cancel <run id>`');
      expect(answer.text).toContain('`/loopgate approvals`');
    }
  });

  it("status lists this channel's runs: working, waiting for whom (with the card), finished", async () => {
    const waiting = await fx.pendingApproval();
    expect((await command(STRANGER, 'status', 'C0QUIET')).text).toContain('No recent runs');
    const answer = await command(STRANGER, 'status');
    expect(answer.text).toContain(`\`${waiting.runId}\``);
    expect(answer.text).toContain('*waiting for approval*');
    expect(answer.text).toContain(`by <@${MANAGER}>, <@${REQUESTER}>, <!subteam^S0SRE>`);
    const permalink = await fx.fake.waitForCall('chat.getPermalink');
    expect(answer.text).toContain(`<${String(permalink.response?.permalink)}|\`http_request\`>`);
    expect(answer.blocks.length).toBeGreaterThan(1);
  });

  it('status says a run waits for its sub-agents, naming them', async () => {
    const runId = 'r-waits-for-agents';
    const base = createRun({
      runId,
      requester: { userId: REQUESTER },
      systemPrompt: 's',
      question: 'q',
      now: Date.now(),
    });
    const call = (id: string, agent: string) => ({
      toolCallId: id,
      tool: `ask_${agent}`,
      agent,
      childRunId: childRunIdFor(runId, id),
      task: 't',
      caps: { maxTokens: 1, maxCostUsd: 1, deadlineMs: 1 },
      at: 0,
    });
    const state: RunState = {
      ...base,
      status: 'awaiting_approval',
      stopReason: null,
      stopMessage: null,
      messages: [
        ...base.messages,
        {
          role: 'assistant',
          content: null,
          toolCalls: [
            { id: 'lg1_0_a', name: 'ask_triage', arguments: '{"task":"t"}' },
            { id: 'lg1_1_b', name: 'ask_writer', arguments: '{"task":"t"}' },
          ],
        },
      ],
      turn: {
        slots: [
          { toolCallId: 'lg1_0_a', tool: 'ask_triage', result: null },
          { toolCallId: 'lg1_1_b', tool: 'ask_writer', result: null },
        ],
        pending: [],
        delegated: [call('lg1_0_a', 'triage'), call('lg1_1_b', 'writer')],
      },
    };
    await fx.store.runs.createRun(state, {
      teamId: fx.id.teamId,
      channelId: CHANNEL,
      threadTs: '1700000000.000100',
      requestMessageTs: '1700000000.000100',
    });
    const answer = await command(STRANGER, 'status');
    expect(answer.text).toContain(`\`${runId}\``);
    expect(answer.text).toContain('*waiting for its sub-agents* `triage`, `writer`');
  });

  it('cancel by the requester: the run is asked to stop and a cancel job is queued', async () => {
    const run = await fx.pendingApproval();
    const answer = await command(REQUESTER, `cancel ${run.runId}`);
    expect(answer.text).toContain(`Cancelling run \`${run.runId}\``);
    const loaded = await fx.store.runs.loadRun(run.runId);
    expect(loaded?.cancelRequest).toMatchObject({ by: REQUESTER });
    const jobs = (await fx.jobs()).filter((j) => j.name === 'cancel');
    expect(jobs.map((j) => [j.id, j.data])).toEqual([
      [cancelJobId(run.runId), { v: 1, runId: run.runId, by: REQUESTER }],
    ]);
  });

  it('cancel by an approver through a user group is allowed; by a stranger it is refused', async () => {
    const run = await fx.pendingApproval();
    const refused = await command(STRANGER, `cancel ${run.runId}`);
    expect(refused.text).toBe('You cannot cancel that run, or it does not exist.');
    expect((await fx.store.runs.loadRun(run.runId))?.cancelRequest).toBeNull();
    expect(await fx.jobs()).toHaveLength(0);

    await command(GROUPIE, `cancel ${run.runId}`);
    expect((await fx.store.runs.loadRun(run.runId))?.cancelRequest).toMatchObject({ by: GROUPIE });
  });

  it("cancel by an approver who cannot see the run's private channel: refused exactly as an unknown run", async () => {
    const run = await fx.pendingApproval({ channel: 'G0PRIVATE' });
    const refused = await command(GROUPIE, `cancel ${run.runId}`, CHANNEL);
    const unknown = await command(GROUPIE, 'cancel r-nope', CHANNEL);
    expect(refused).toEqual(unknown);
    expect(refused.text).toBe('You cannot cancel that run, or it does not exist.');
    expect(refused.text).not.toContain(REQUESTER);
    expect((await fx.store.runs.loadRun(run.runId))?.cancelRequest).toBeNull();
    expect(await fx.jobs()).toHaveLength(0);
    // Its requester still may.
    await command(REQUESTER, `cancel ${run.runId}`, 'G0PRIVATE');
    expect((await fx.store.runs.loadRun(run.runId))?.cancelRequest).toMatchObject({ by: REQUESTER });
  });

  it("cancel is open to the approvers of the run's tools, not to every default approver", async () => {
    await fx.cleanup();
    // http_request has its own approvers; the default approver (MANAGER) approves only other tools.
    fx = await startBotFixture({
      policyYaml: `approvals: { approvers: [${MANAGER}] }\ntools: { http_request: { allow: ["https://deploy.internal.example/"], approvers: [${GROUP}] } }`,
    });
    const run = await fx.pendingApproval();
    expect((await command(MANAGER, `cancel ${run.runId}`)).text).toBe(
      'You cannot cancel that run, or it does not exist.',
    );
    expect((await fx.store.runs.loadRun(run.runId))?.cancelRequest).toBeNull();
    await command(GROUPIE, `cancel ${run.runId}`);
    expect((await fx.store.runs.loadRun(run.runId))?.cancelRequest).toMatchObject({ by: GROUPIE });
  });

  it('before its first approval, a run may be cancelled by the approvers of the gated tools the policy enables', async () => {
    const run = await fx.pendingApproval();
    await fx.redis.del(fx.store.context.keys.run(run.runId).approvals); // as if no approval was asked yet
    // The only gated tool enabled is post_message, approved by U0COMMS alone: not the default approvers.
    expect((await command(MANAGER, `cancel ${run.runId}`)).text).toBe(
      'You cannot cancel that run, or it does not exist.',
    );
    await command('U0COMMS', `cancel ${run.runId}`);
    expect((await fx.store.runs.loadRun(run.runId))?.cancelRequest).toMatchObject({ by: 'U0COMMS' });
  });

  it('cancel without a run, of an unknown run, or of a bad id explains itself', async () => {
    expect((await command(REQUESTER, 'cancel')).text).toContain('Usage');
    expect((await command(REQUESTER, 'cancel r-nope')).text).toBe(
      'You cannot cancel that run, or it does not exist.',
    );
    expect((await command(REQUESTER, 'cancel a:b')).text).toContain('is not a run id');
    expect(await fx.jobs()).toHaveLength(0);
  });

  it('approvals lists the pending approvals the caller may decide, with a link to each card', async () => {
    const first = await fx.pendingApproval();
    const own = await fx.pendingApproval({ requester: MANAGER });
    const answer = await command(GROUPIE, 'approvals');
    expect(answer.text).toContain('Approvals waiting for you* (2');
    expect(answer.text).toContain(`asked by <@${REQUESTER}>`);
    expect(answer.text).toContain(`asked by <@${MANAGER}>`);
    expect(answer.text).toContain('|open the card>');
    // The manager may not approve their own request: only the other one is listed for them.
    const managers = await command(MANAGER, 'approvals');
    expect(managers.text).toContain('(1,');
    expect(managers.text).toContain(`asked by <@${REQUESTER}>`);
    expect(managers.text).not.toContain(own.runId);
    expect(first.runId).not.toBe(own.runId);
    expect((await command(STRANGER, 'approvals')).text).toContain('No approvals are waiting for you');
  });
});

describe('App Home', () => {
  it("publishes the viewer's pending approvals and recent runs", async () => {
    const mine = await fx.pendingApproval({ requester: MANAGER });
    await fx.pendingApproval();
    const envelope = eventEnvelope(fx.id, {
      type: 'app_home_opened',
      user: MANAGER,
      channel: 'D0HOME',
      tab: 'home',
    });
    expect((await fx.post(eventBody(envelope))).status).toBe(200);
    await fx.bot.idle();
    const home = fx.fake.home(MANAGER) as { type: string; blocks: unknown[] };
    expect(home.type).toBe('home');
    expect(home.blocks.length).toBeLessThanOrEqual(100);
    const text = JSON.stringify(home.blocks);
    expect(text).toContain('Approvals waiting for you* (1)');
    expect(text).toContain(`asked by <@${REQUESTER}>`);
    expect(text).toContain('Your recent runs');
    expect(text).toContain(mine.runId);
  });

  it('ignores the Messages tab', async () => {
    const envelope = eventEnvelope(fx.id, {
      type: 'app_home_opened',
      user: MANAGER,
      channel: 'D0HOME',
      tab: 'messages',
    });
    await fx.post(eventBody(envelope));
    await fx.bot.idle();
    expect(fx.fake.callsOf('views.publish')).toHaveLength(0);
  });
});
