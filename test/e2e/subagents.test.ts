/**
 * Sub-agents end to end, with loopgate's real processes against real Redis, the fake Slack Web API and
 * the fake OpenAI. A parent asks two sub-agents at once; one of them needs an approval, whose card lands
 * in the person's thread naming the sub-agent and the requester; after Approve the child finishes and the
 * parent answers with both results in call order, once. Then a worker is SIGKILLed while a child works:
 * another worker finishes the child and the parent, nothing approved runs twice, the answer is posted once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childRunIdFor } from '../../src/loop/delegate.js';
import { addRunJob } from '../../src/queue/runs-queue.js';
import { ACTION_IDS } from '../../src/slack/ids.js';
import type { FakeStep, RecordedRequest, WireMessage } from '../fakes/openai-server.js';
import { killAllLoopgate } from './support/loopgate-process.js';
import { type Brain, callThenAnswer, succeeded } from './support/model-brains.js';
import { buttonsOf, wordsOf } from './support/slack-view.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';
import { CHANNEL, startWorld, type World } from './support/world.js';

const AGENTS = [
  'agents:',
  '  triage:',
  '    description: Reads the status page of a service.',
  '    prompt: You are TRIAGE. Read status pages; change nothing.',
  '    tools: [http_get]',
  '  deployer:',
  '    description: Deploys a service version through the deploy API.',
  '    prompt: You are DEPLOYER. Deploy exactly what you are asked to.',
  '    tools: [http_request]',
];

/** The answer a sub-agent gave, read from the tool result its parent got. */
const answerIn = (toolResult: string | undefined): string => {
  const parsed = JSON.parse(toolResult ?? '{}') as {
    ok?: boolean;
    data?: { answer?: string };
    error?: { code: string };
  };
  return parsed.ok ? (parsed.data?.answer ?? '') : `(failed: ${parsed.error?.code})`;
};

describe('sub-agents through the real bot and worker processes', { timeout: 90_000 }, () => {
  let w: SlackWorld;
  beforeAll(async () => {
    w = await startSlackWorld({ mode: 'split', workers: 2, policyExtra: AGENTS });
  }, 120_000);
  afterAll(async () => {
    await w?.close();
  }, 60_000);

  it('two sub-agents at once, one needing approval in the thread: the card names it and the requester; the parent answers once, with both in call order', async () => {
    const channel = w.newChannel();
    const deployUrl = w.deployUrl('sub-agents-payments');
    const parent: Brain = ({ toolResults }) =>
      toolResults.length === 0
        ? {
            toolCalls: [
              {
                name: 'ask_triage',
                arguments: JSON.stringify({
                  task: w.model.tagged('sub-triage', 'Is the payments status page green?'),
                }),
              },
              {
                name: 'ask_deployer',
                arguments: JSON.stringify({ task: w.model.tagged('sub-deployer', 'Deploy payments 1.4.3.') }),
              },
            ],
          }
        : { content: `Triage: ${answerIn(toolResults[0])} Deploy: ${answerIn(toolResults[1])}` };
    w.model.brain('sub-parent', parent);
    w.model.brain(
      'sub-triage',
      callThenAnswer('http_get', { url: w.statusUrl('payments') }, (r) =>
        succeeded(r) ? 'payments is operational.' : 'the status page did not answer.',
      ),
    );
    w.model.brain(
      'sub-deployer',
      callThenAnswer(
        'http_request',
        { method: 'POST', url: deployUrl, body: { service: 'payments', version: '1.4.3' } },
        (r) => (succeeded(r) ? 'payments 1.4.3 is deployed.' : 'payments was not deployed.'),
      ),
    );
    const asked = await w.ask(
      channel,
      PEOPLE.requester,
      w.model.tagged('sub-parent', 'Check payments, then deploy 1.4.3'),
    );

    // The deployer's card is in the person's thread, naming the sub-agent and who asked.
    const card = await w.card(asked);
    const message = w.message(card);
    const words = wordsOf(message);
    expect(words).toContain('Approval needed');
    expect(words).toContain(deployUrl);
    expect(words).toContain(`Asked by <@${PEOPLE.requester}> through the sub-agent \`deployer\``);
    expect(buttonsOf(message.blocks).map((b) => b.actionId)).toEqual([
      ACTION_IDS.approve,
      ACTION_IDS.reject,
      ACTION_IDS.edit,
      ACTION_IDS.details,
    ]);
    const parentRun = await w.store.runs.loadRun(asked.runId);
    expect(parentRun?.state.status).toBe('awaiting_approval');
    // Each call is answered by its own child run (the triage one may have been applied already).
    const asks = parentRun?.state.messages.findLast((m) => m.role === 'assistant' && m.toolCalls);
    const [triageId, deployerId] = (asks?.role === 'assistant' ? (asks.toolCalls ?? []) : []).map((c) =>
      childRunIdFor(asked.runId, c.id),
    );
    expect(card.approvalId.startsWith(`${deployerId}.`)).toBe(true);
    // The other sub-agent works meanwhile.
    await w.waitFor('the triage sub-agent to finish', async () => {
      const triage = await w.store.runs.loadRun(triageId ?? '');
      return triage?.state.status === 'completed';
    });

    // The same approver rules apply: the requester may not approve what their run asks for.
    await w.click(message, PEOPLE.requester, ACTION_IDS.approve);
    await w.waitFor(
      'the refusal to the requester',
      () => w.ephemeralsTo(PEOPLE.requester, channel).length === 1,
    );
    expect(w.hits(deployUrl)).toEqual([]);

    expect((await w.click(w.message(card), PEOPLE.manager, ACTION_IDS.approve)).status).toBe(200);
    const run = await w.ended(asked.runId, 45_000);
    expect(run.state.status).toBe('completed');
    expect(run.state.answer).toEqual([
      'Triage: payments is operational. Deploy: payments 1.4.3 is deployed.',
    ]);
    expect(w.hits(deployUrl).map((r) => JSON.parse(r.body))).toEqual([
      { service: 'payments', version: '1.4.3' },
    ]);
    expect(run.state.subagents?.map((s) => [s.agent, s.outcome])).toEqual(
      expect.arrayContaining([
        ['triage', 'completed'],
        ['deployer', 'completed'],
      ]),
    );
    expect(run.state.subagents?.find((s) => s.agent === 'deployer')?.actions).toEqual([
      expect.objectContaining({
        tool: 'http_request',
        outcome: 'succeeded',
        decidedBy: PEOPLE.manager,
        agent: 'deployer',
      }),
    ]);

    // One answer in the thread, the parent's: the sub-agents' answers are not posted as answers.
    const bot = () => w.slack.thread(channel, asked.threadTs).filter((m) => m.bot_id);
    expect(bot().filter((m) => wordsOf(m).includes('Triage: payments is operational.'))).toHaveLength(1);
    expect(
      bot().filter(
        (m) => wordsOf(m).includes('payments 1.4.3 is deployed.') && !wordsOf(m).includes('Triage:'),
      ),
    ).toEqual([]);
    // The sub-agents' progress went into the parent's placeholder, which is gone with the answer.
    await w.waitFor('no placeholder left', () => bot().every((m) => !m.text.startsWith(':hourglass')));
    const placeholderEdits = w.slack
      .callsOf('chat.update')
      .map((c) => String(c.args.text))
      .filter((t) => t.startsWith(':hourglass'));
    expect(placeholderEdits.some((t) => t.includes('Asking triage… · Asking deployer…'))).toBe(true);
  });
});

describe('a worker SIGKILLed while a sub-agent works', () => {
  let world: World | undefined;
  afterAll(async () => {
    await killAllLoopgate();
    await world?.close();
  }, 60_000);

  const toolMessages = (req: RecordedRequest) =>
    req.body.messages.filter((m): m is Extract<WireMessage, { role: 'tool' }> => m.role === 'tool');
  const systemOf = (req: RecordedRequest) => {
    const first = req.body.messages[0];
    return typeof first?.content === 'string' ? first.content : '';
  };

  it('another worker finishes the child and the parent; the approved write ran once; one answer', async () => {
    world = await startWorld({ script: [], holdMs: 2_500 });
    const w = world;
    const writeUrl = `${w.slow.url}/write`;
    const statusUrl = `${w.slow.url}/status`;
    const config = w.config.write(
      'agents.yaml',
      [
        'approvals:',
        '  approvers: [U0MGR]',
        'tools:',
        '  http_get:',
        `    allow: [{ prefix: ${JSON.stringify(`${w.slow.url}/`)}, allowPrivate: true }]`,
        '  http_request:',
        `    allow: [{ prefix: ${JSON.stringify(`${w.slow.url}/`)}, allowPrivate: true }]`,
        'agents:',
        '  checker:',
        '    description: Writes a marker, then reads the status page.',
        '    prompt: You are CHECKER.',
        '    tools: [http_request, http_get]',
        '',
      ].join('\n'),
    );
    // The parent asks the checker; the checker writes (approved), reads the slow status page, answers.
    const brain: FakeStep = (req) => {
      const results = toolMessages(req);
      if (systemOf(req).startsWith('You are CHECKER.')) {
        if (results.length === 0) {
          return {
            toolCalls: [
              {
                name: 'http_request',
                arguments: JSON.stringify({ method: 'POST', url: writeUrl, body: { marker: 1 } }),
              },
            ],
          };
        }
        if (results.length === 1)
          return { toolCalls: [{ name: 'http_get', arguments: JSON.stringify({ url: statusUrl }) }] };
        return { content: 'checker: the marker is written and the status page is operational.' };
      }
      if (results.length === 0) {
        return {
          toolCalls: [
            {
              name: 'ask_checker',
              arguments: JSON.stringify({ task: 'Write the marker, then check status.' }),
            },
          ],
        };
      }
      return {
        content: `Parent: ${answerIn(typeof results[0]?.content === 'string' ? results[0].content : '')}`,
      };
    };
    w.openai.push(...Array.from({ length: 12 }, () => brain));
    const env = { LOOPGATE_CONFIG: config };
    const first = w.startWorker(env);
    const { runId, threadTs } = await w.ask('Write the marker and check the status page.');

    const childId = await w.waitFor(
      'the parent to hand the call to the checker',
      async () => (await w.loadRun(runId))?.state.turn?.delegated?.[0]?.childRunId,
      30_000,
    );
    const approval = await w.waitFor(
      "the checker's approval",
      async () => (await w.store.approvals.listForRun(childId)).find((a) => a.status === 'pending' && a.card),
      30_000,
    );
    expect(approval.agent).toBe('checker');
    expect(approval.requester).toBe('U0ALICE');
    const decided = await w.store.approvals.decide({
      approvalId: approval.approvalId,
      decision: 'approved',
      decidedBy: 'U0MGR',
      now: Date.now(),
    });
    expect(decided.won).toBe(true);
    await addRunJob(w.queue, {
      name: 'resume',
      data: { v: 1, runId: childId, approvalId: approval.approvalId },
    });

    // The approved write answered; the child now waits on the slow read: kill its worker there.
    await w.waitFor(
      'the status read to be in flight',
      async () => w.slow.requests.some((r) => r.path === '/status'),
      30_000,
    );
    expect((await w.loadRun(childId))?.state.status).toBe('running');
    first.kill('SIGKILL');
    expect((await first.exit).signal).toBe('SIGKILL');
    w.startWorker(env);

    const done = await w.waitFor(
      'the parent to complete in the second worker',
      async () => {
        const run = await w.loadRun(runId);
        return run?.state.status === 'completed' && run.answerTs !== null ? run : null;
      },
      45_000,
    );
    expect(done.state.answer).toEqual([
      'Parent: checker: the marker is written and the status page is operational.',
    ]);
    // The approved write ran once, whatever the crash; the read (a read) was made again.
    expect(w.slow.requests.filter((r) => r.path === '/write')).toHaveLength(1);
    expect(w.slow.requests.filter((r) => r.path === '/status')).toHaveLength(2);
    const child = await w.loadRun(childId);
    expect(child?.state.actions.map((a) => [a.tool, a.outcome])).toEqual([['http_request', 'succeeded']]);
    // No model reply was asked twice: parent 2, checker 3.
    expect(w.openai.requests).toHaveLength(5);
    const answers = w.slack
      .callsOf('chat.postMessage')
      .filter((c) => c.args.thread_ts === threadTs && String(c.args.text).includes('checker: the marker'));
    expect(answers).toHaveLength(1);
    expect(String(answers[0]?.args.text)).toContain('Parent: ');
    expect(w.slack.thread(CHANNEL, threadTs).filter((m) => m.text.startsWith(':hourglass'))).toEqual([]);
  }, 120_000);
});
