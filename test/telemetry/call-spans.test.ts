/**
 * The spans of the calls a run makes outside the engine: `slack <method>` (CLIENT) for Web API calls and
 * `send <queue>` (PRODUCER) for jobs handed to the queue. They hang from the span a `within` source names
 * at the moment of each call, across awaits, and are not made at all outside a traced span.
 */
import { context, type Span, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunTracer } from '../../src/telemetry/run-tracer.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = new RunTracer({
  tracer: provider.getTracer('test'),
  propagator: new W3CTraceContextPropagator(),
  captureContent: false,
  redact: (t) => t,
  shutdown: () => provider.shutdown(),
});

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
});
afterAll(async () => {
  context.disable();
  await provider.shutdown();
});

const named = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('Slack call and queue send spans', () => {
  it('a Slack call inside `within` is a CLIENT child of the span the source names when the call starts', async () => {
    exporter.reset();
    const holder: { span?: Span } = {};
    await tracer.within({ current: () => holder.span }, async () => {
      // Before the source has a span: the call goes untraced.
      await tracer.slackCall({ method: 'auth.test' }, async () => 'ok');
      await tick();
      holder.span = provider.getTracer('test').startSpan('invoke_agent loopgate');
      await tick();
      await tracer.slackCall({ method: 'chat.postMessage', channel: 'C1' }, async () => ({ ok: true }));
      holder.span.end();
    });
    expect(named('slack auth.test')).toHaveLength(0);
    const [call] = named('slack chat.postMessage');
    const [parent] = named('invoke_agent loopgate');
    expect(call?.kind).toBe(SpanKind.CLIENT);
    expect(call?.parentSpanContext?.spanId).toBe(parent?.spanContext().spanId);
    expect(call?.spanContext().traceId).toBe(parent?.spanContext().traceId);
    expect(call?.attributes).toEqual({
      'rpc.system': 'slack_web_api',
      'rpc.method': 'chat.postMessage',
      'slack.channel.id': 'C1',
    });
  });

  it('a refused call records Slack’s error code and rethrows it unchanged', async () => {
    exporter.reset();
    const refusal = Object.assign(new Error('An API error occurred: channel_not_found'), {
      code: 'slack_webapi_platform_error',
      data: { ok: false, error: 'channel_not_found' },
    });
    const root = provider.getTracer('test').startSpan('run');
    const thrown = await tracer
      .within({ current: () => root }, () =>
        tracer.slackCall({ method: 'chat.update', channel: 'C9' }, () => Promise.reject(refusal)),
      )
      .catch((err: unknown) => err);
    root.end();
    expect(thrown).toBe(refusal);
    const [call] = named('slack chat.update');
    expect(call?.attributes['error.type']).toBe('channel_not_found');
    expect(call?.status.code).toBe(SpanStatusCode.ERROR);
  });

  it('outside any traced span a Slack call makes no span', async () => {
    exporter.reset();
    expect(await tracer.slackCall({ method: 'users.info' }, async () => 7)).toBe(7);
    expect(exporter.getFinishedSpans()).toHaveLength(0);
  });

  it('a queue send is a PRODUCER child of the span that caused it, failed sends marked', async () => {
    exporter.reset();
    const decision = provider.getTracer('test').startSpan('approval.decide http_request');
    await tracer.queueSend({ queue: 'runs', job: 'resume', runId: 'r1' }, decision, async () => 'job-1');
    await expect(
      tracer.queueSend({ queue: 'runs', job: 'resume', runId: 'r1' }, decision, () =>
        Promise.reject(new TypeError('connection is closed')),
      ),
    ).rejects.toThrow('connection is closed');
    decision.end();
    const sends = named('send runs');
    expect(sends).toHaveLength(2);
    for (const send of sends) {
      expect(send.kind).toBe(SpanKind.PRODUCER);
      expect(send.parentSpanContext?.spanId).toBe(decision.spanContext().spanId);
      expect(send.attributes).toMatchObject({
        'messaging.system': 'bullmq',
        'messaging.operation.type': 'send',
        'messaging.destination.name': 'runs',
        'loopgate.job.name': 'resume',
        'loopgate.run.id': 'r1',
      });
    }
    expect(sends[1]?.attributes['error.type']).toBe('TypeError');
    // Without a parent and outside any span: no span.
    await tracer.queueSend({ queue: 'runs', job: 'start' }, null, async () => undefined);
    expect(named('send runs')).toHaveLength(2);
  });
});
