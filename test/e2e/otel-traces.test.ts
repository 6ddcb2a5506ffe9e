/**
 * End to end, with loopgate's real processes and the official OpenTelemetry SDK exporting over OTLP/HTTP
 * (protobuf, the default) to a receiver in the test: a run that pauses for an approval, whose bot and worker are then restarted
 * (so the resume is worked by another worker process), is one trace: the bot's event span at its root,
 * the first stretch (`invoke_agent`) with its `chat` and the pause, the decision in the bot, the wait for
 * it (`await_approval`: who was asked, who decided, how long), and the resumed stretch with the write's
 * `execute_tool` and the final `chat`. No message content is recorded by default.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTION_IDS } from '../../src/slack/ids.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../fakes/otlp-receiver.js';
import { askToDeploy, DEPLOYED, postedWith } from './support/deploy-case.js';
import { PEOPLE, type SlackWorld, startSlackWorld } from './support/slack-world.js';

let w: SlackWorld;
let otlp: OtlpReceiver;
beforeAll(async () => {
  otlp = await startOtlpReceiver();
  w = await startSlackWorld({
    mode: 'split',
    workers: 1,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_BSP_SCHEDULE_DELAY: '100' },
  });
}, 120_000);
afterAll(async () => {
  await w?.close();
  await otlp?.close();
}, 60_000);

const of = (runId: string) => otlp.spans.filter((s) => s.attributes['loopgate.run.id'] === runId);
const named = (spans: ReceivedSpan[], prefix: string) => spans.filter((s) => s.name.startsWith(prefix));

describe('OpenTelemetry traces of a run across a pause and a restart', { timeout: 90_000 }, () => {
  it('one trace: event, stretches on two worker processes, chat and execute_tool spans, the approval wait, no content', async () => {
    const c = await askToDeploy(w, 'otel');
    const runId = c.asked.runId;
    const first = await w.waitFor('the first stretch exported', () =>
      named(of(runId), 'invoke_agent').find((s) => s.attributes['loopgate.job.name'] === 'start'),
    );
    // Another bot and worker process take over while the run waits for its approval.
    await w.restartAll();
    const res = await w.click(w.message(c.card), PEOPLE.manager, ACTION_IDS.approve);
    expect(res.status).toBe(200);
    await w.ended(runId);
    expect(postedWith(w, c, DEPLOYED)).toHaveLength(1);
    const resumed = await w.waitFor('the resumed stretch exported', () =>
      named(of(runId), 'invoke_agent').find((s) => s.attributes['loopgate.job.name'] === 'resume'),
    );
    const wait = await w.waitFor('the approval wait exported', () => named(of(runId), 'await_approval')[0]);
    const decision = await w.waitFor('the decision exported', () => named(of(runId), 'approval.decide')[0]);
    const root = await w.waitFor('the event span exported', () => named(of(runId), 'slack.event')[0]);
    // The chat spans carry no run id attribute of their own: they are found by trace and parent.
    const trace = otlp.spans.filter((s) => s.traceId === root.traceId);

    // One trace, rooted at the bot's event span.
    expect(root.parentSpanId).toBe('');
    expect(root.resource['service.name']).toBe('loopgate-bot');
    for (const span of [first, resumed, wait, decision]) expect(span.traceId).toBe(root.traceId);
    expect(first.parentSpanId).toBe(root.spanId);
    expect(resumed.parentSpanId).toBe(root.spanId);
    expect(decision.parentSpanId).toBe(root.spanId);
    expect(resumed.links).toEqual([{ traceId: root.traceId, spanId: decision.spanId }]);
    // Worked by two worker processes.
    expect(first.resource['service.name']).toBe('loopgate-worker');
    expect(resumed.resource['service.name']).toBe('loopgate-worker');
    expect(resumed.resource['process.pid']).not.toBe(first.resource['process.pid']);

    // GenAI conventions on the stretches.
    for (const stretch of [first, resumed]) {
      expect(stretch.name).toBe('invoke_agent loopgate');
      expect(stretch.attributes).toMatchObject({
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': 'loopgate',
        'gen_ai.conversation.id': runId,
        'slack.channel.id': c.channel,
        'slack.thread.ts': c.asked.threadTs,
        'slack.thread.permalink': expect.stringContaining(c.channel),
      });
    }
    expect(first.attributes['loopgate.run.status']).toBe('awaiting_approval');
    expect(first.events).toContain('approval_needed');
    expect(resumed.attributes).toMatchObject({
      'loopgate.run.status': 'completed',
      'loopgate.run.stop_reason': 'completed',
    });

    const chats = trace.filter((s) => s.name.startsWith('chat'));
    expect(chats.map((s) => s.parentSpanId).sort()).toEqual([first.spanId, resumed.spanId].sort());
    for (const chat of chats) {
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': expect.any(String),
        'gen_ai.usage.input_tokens': expect.any(Number),
        'gen_ai.usage.output_tokens': expect.any(Number),
        'gen_ai.response.finish_reasons': [expect.any(String)],
      });
    }
    const firstChat = chats.find((s) => s.parentSpanId === first.spanId);
    expect(firstChat?.attributes['gen_ai.response.finish_reasons']).toEqual(['tool_calls']);

    const tools = trace.filter((s) => s.name.startsWith('execute_tool'));
    expect(tools).toHaveLength(1);
    expect(tools[0]?.name).toBe('execute_tool http_request');
    expect(tools[0]?.parentSpanId).toBe(resumed.spanId);
    expect(tools[0]?.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'http_request',
      'loopgate.tool.effect': 'write',
      'loopgate.tool.outcome': 'ok',
    });

    // The wait: who was asked, who decided, how long; it spans the restart.
    expect(wait.parentSpanId).toBe(root.spanId);
    expect(wait.attributes).toMatchObject({
      'gen_ai.tool.name': 'http_request',
      'loopgate.approval.id': c.card.approvalId,
      'loopgate.approval.requested_by': PEOPLE.requester,
      'loopgate.approval.asked': expect.arrayContaining([PEOPLE.manager]),
      'loopgate.approval.decided_by': PEOPLE.manager,
      'loopgate.approval.decision': 'approved',
    });
    expect(wait.attributes['loopgate.approval.wait_ms']).toBe(wait.endMs - wait.startMs);
    expect(wait.startMs).toBeLessThanOrEqual(first.endMs);
    expect(wait.endMs).toBeLessThanOrEqual(resumed.startMs);
    expect(decision.attributes).toMatchObject({
      'loopgate.approval.decided_by': PEOPLE.manager,
      'loopgate.approval.decision': 'approved',
    });

    // Queue hops: the bot hands each job to the queue under the span that caused it.
    const sends = trace.filter((s) => s.name.startsWith('send '));
    const startSend = sends.find((s) => s.attributes['loopgate.job.name'] === 'start');
    const resumeSend = sends.find((s) => s.attributes['loopgate.job.name'] === 'resume');
    expect(startSend?.parentSpanId).toBe(root.spanId);
    expect(resumeSend?.parentSpanId).toBe(decision.spanId);
    for (const send of [startSend, resumeSend]) {
      expect(send?.kind).toBe(4);
      expect(send?.resource['service.name']).toBe('loopgate-bot');
      expect(send?.attributes).toMatchObject({
        'messaging.system': 'bullmq',
        'messaging.operation.type': 'send',
        'messaging.destination.name': expect.any(String),
        'loopgate.run.id': runId,
      });
    }

    // Slack calls: the card is posted in the first stretch, the answer in the resumed one.
    const slackCalls = (stretch: ReceivedSpan) =>
      trace.filter((s) => s.parentSpanId === stretch.spanId && s.name.startsWith('slack '));
    const cardPost = slackCalls(first).find((s) => s.name === 'slack chat.postMessage');
    expect(cardPost?.kind).toBe(3);
    expect(cardPost?.attributes).toMatchObject({
      'rpc.system': 'slack_web_api',
      'rpc.method': 'chat.postMessage',
      'slack.channel.id': c.channel,
    });
    expect(slackCalls(resumed).map((s) => s.name)).toContain('slack chat.postMessage');

    // Sent as OTLP protobuf, the default (OTEL_EXPORTER_OTLP_PROTOCOL unset), by the bot and the workers.
    expect(new Set(otlp.encodings)).toEqual(new Set(['protobuf']));

    // No content by default: not the question, not the arguments, not the answer.
    const keys = trace.flatMap((s) => Object.keys(s.attributes));
    for (const key of ['gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.tool.call.arguments']) {
      expect(keys).not.toContain(key);
    }
    const exported = otlp.bodies.join('\n');
    expect(exported).not.toContain('please deploy payments');
    expect(exported).not.toContain('1.4.3');
    expect(exported).not.toContain(DEPLOYED);
  });
});
