/**
 * Per-channel permissions end to end with loopgate's real processes (`npm run bot` and a `npm run worker`),
 * real Redis, the fake Slack (conversations.info names the channels) and OpenAI, and signed clicks. In a
 * DM the rules make every tool read-only: the model is not offered http_request, a call to it anyway is
 * refused with `channel_not_allowed` and nothing runs, and a sub-agent asked from the DM is held to the
 * same. In an `incident-*` channel writes are offered, and the channel's approvers replace the tool's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { runIdForEvent } from '../../src/store/ids.js';
import type { RecordedRequest } from '../fakes/openai-server.js';
import { directMessageEvent, eventBody, eventEnvelope } from '../fakes/slack-signing.js';
import { toolResultsSeen } from './support/deploy-case.js';
import { callThenAnswer, succeeded } from './support/model-brains.js';
import { wordsOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

let w: SlackWorld;
beforeAll(async () => {
  w = await startSlackWorld({
    mode: 'split',
    workers: 1,
    policyExtra: [
      'channels:',
      '  rules:',
      '    - name: incidents',
      '      match: { name: "incident-*" }',
      `      approvers: [${PEOPLE.sreA}]`,
      '    - name: quiet',
      '      match: { name: "quiet-*" }',
      '      tools: [http_get]',
      '    - name: direct messages',
      '      match: { kind: dm }',
      '      readOnly: true',
      'agents:',
      '  deployer:',
      '    description: Deploys a service version through the deploy API.',
      '    prompt: You are DEPLOYER.',
      '    tools: [http_request]',
    ],
  });
}, 120_000);
afterAll(async () => {
  await w?.close();
}, 60_000);

const DONE = 'The deploy went through.';
const NOT_DONE = 'The deploy did not happen.';
const offered = (req: RecordedRequest | undefined) => (req?.body.tools ?? []).map((t) => t.function.name);

/** A question in a fresh DM with the bot (`message.im`); the run's id. */
async function askInDm(text: string): Promise<string> {
  const channel = `D${w.newChannel().slice(1)}`;
  const written = w.slack.userMessage({ channel, user: PEOPLE.requester, text });
  const envelope = eventEnvelope(
    w.id,
    directMessageEvent(w.id, { channel, user: PEOPLE.requester, text, ts: written.ts }),
  );
  expect((await w.post(eventBody(envelope))).status).toBe(200);
  return runIdForEvent(envelope.event_id);
}

function deployBrain(tag: string, name: string) {
  const url = w.deployUrl(name);
  w.model.brain(
    tag,
    callThenAnswer('http_request', { method: 'POST', url, body: { n: 1 } }, (r) =>
      succeeded(r) ? DONE : NOT_DONE,
    ),
  );
  return url;
}

describe('per-channel permissions end to end', { timeout: 90_000 }, () => {
  it('in a DM writes are not offered; a call anyway is refused as an observation and nothing runs', async () => {
    const url = deployBrain('dm', 'dm-web');
    const runId = await askInDm(w.model.tagged('dm', 'deploy web'));
    const run = await w.ended(runId);
    const first = w.model.requestsOf('dm')[0];
    expect(offered(first)).toContain('http_get');
    expect(offered(first)).not.toContain('http_request');
    const [result] = toolResultsSeen(w, 'dm');
    expect(JSON.parse(result ?? '{}')).toMatchObject({ ok: false, error: { code: 'channel_not_allowed' } });
    expect(result).toContain('channel rule 3 (direct messages)');
    expect(w.hits(url)).toEqual([]);
    expect(await w.store.approvals.listForRun(runId)).toEqual([]);
    expect(run.state.status).toBe('completed');
  });

  it("a sub-agent asked from a DM inherits the DM's rules: its write is not offered either", async () => {
    const url = deployBrain('dm-child', 'dm-child-web');
    w.model.brain('dm-parent', ({ toolResults }) =>
      toolResults.length === 0
        ? {
            toolCalls: [
              {
                name: 'ask_deployer',
                arguments: JSON.stringify({ task: w.model.tagged('dm-child', 'Deploy web 2.0.') }),
              },
            ],
          }
        : { content: `The deployer said: ${toolResults[0]}` },
    );
    await w.ended(await askInDm(w.model.tagged('dm-parent', 'ask the deployer')));
    const child = w.model.requestsOf('dm-child');
    expect(offered(child[0])).not.toContain('http_request');
    expect(toolResultsSeen(w, 'dm-child')[0]).toContain('channel_not_allowed');
    expect(w.hits(url)).toEqual([]);
  });

  it("in an incident channel writes are offered, and the channel's approvers decide", async () => {
    const url = deployBrain('incident', 'incident-web');
    const channel = w.newChannel();
    w.slack.setChannelName(channel, 'incident-2041');
    const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged('incident', 'deploy web'));
    const card = await w.card(asked);
    expect(offered(w.model.requestsOf('incident')[0])).toContain('http_request');
    const record = await w.store.approvals.get(card.approvalId);
    expect(record?.approvers).toMatchObject({ users: [PEOPLE.sreA], groups: [] });
    // The record, the card and the audit say that the channel chose them.
    expect(record?.approversFrom).toBe('channel rule 1 (incidents)');
    expect(wordsOf(w.message(card))).toContain('approvers from channel rule 1 (incidents)');
    // The tool's own approver is not this channel's: the click is refused and nothing runs.
    await w.click(w.message(card), PEOPLE.manager, ACTION_IDS.approve);
    await w.waitFor('the refusal', () => w.ephemeralsTo(PEOPLE.manager, channel).length > 0);
    expect((await w.store.approvals.get(card.approvalId))?.status).toBe('pending');
    await w.click(w.message(card), PEOPLE.sreA, ACTION_IDS.approve);
    await w.ended(asked.runId);
    expect(w.hits(url)).toHaveLength(1);
    const audit = await w.store.audit.recent();
    expect(
      audit.find((a) => a.entry.approvalId === card.approvalId && a.entry.decision === 'approved')?.entry,
    ).toMatchObject({ approversFrom: 'channel rule 1 (incidents)', decider: PEOPLE.sreA });
  });

  it('the channel rule is judged again at the click: a channel renamed out of incident-* cannot approve', async () => {
    const url = deployBrain('renamed', 'renamed-web');
    const channel = w.newChannel();
    w.slack.setChannelName(channel, 'incident-2042');
    const asked = await w.ask(channel, PEOPLE.requester, w.model.tagged('renamed', 'deploy web'));
    const card = await w.card(asked);
    w.slack.setChannelName(channel, 'quiet-2042');
    await w.click(w.message(card), PEOPLE.sreA, ACTION_IDS.approve);
    await w.waitFor('the refusal', () =>
      w.ephemeralsTo(PEOPLE.sreA, channel).some((e) => e.text.includes('channel rule 2 (quiet)')),
    );
    expect((await w.store.approvals.get(card.approvalId))?.status).toBe('pending');
    await w.reject(card, PEOPLE.sreA, 'not from this channel');
    await w.ended(asked.runId);
    expect(w.hits(url)).toEqual([]);
  });

  it('a channel whose facts Slack will not give fails closed: no writes offered', async () => {
    const url = deployBrain('unknown', 'unknown-web');
    w.slack.failNext('conversations.info', 20, { kind: 'error', error: 'channel_not_found' });
    const asked = await w.ask(w.newChannel(), PEOPLE.requester, w.model.tagged('unknown', 'deploy web'));
    await w.ended(asked.runId);
    expect(offered(w.model.requestsOf('unknown')[0])).not.toContain('http_request');
    expect(toolResultsSeen(w, 'unknown')[0]).toContain('could not be checked');
    expect(w.hits(url)).toEqual([]);
  });
});
