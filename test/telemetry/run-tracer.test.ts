import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { secretRedactor } from '../../src/log/redact.js';
import type { EngineEvent } from '../../src/loop/engine-events.js';
import { traceCarrierSchema } from '../../src/telemetry/carrier.js';
import { RunTracer } from '../../src/telemetry/run-tracer.js';
import { telemetrySettings } from '../../src/telemetry/settings.js';

const SECRET = 'sk-live-0123456789abcdef';
const providers: BasicTracerProvider[] = [];
afterEach(async () => {
  await Promise.all(providers.splice(0).map((p) => p.shutdown()));
});

function tracer(captureContent: boolean) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  providers.push(provider);
  const run = new RunTracer({
    tracer: provider.getTracer('test'),
    propagator: new W3CTraceContextPropagator(),
    captureContent,
    redact: secretRedactor([SECRET]).text,
    shutdown: () => provider.shutdown(),
  });
  return { run, spans: () => exporter.getFinishedSpans() };
}

const events: EngineEvent[] = [
  { type: 'step_started', runId: 'r1', step: 1 },
  {
    type: 'model_replied',
    runId: 'r1',
    step: 1,
    toolCalls: 1,
    durationMs: 40,
    usage: { inputTokens: 120, outputTokens: 30 },
    costUsd: 0.0001,
    model: 'gpt-test',
    finishReason: 'tool_calls',
  },
  {
    type: 'tool_started',
    runId: 'r1',
    toolCallId: 'c1',
    tool: 'http_get',
    effect: 'read',
    args: { url: `https://x.example/?key=${SECRET}`, password: 'hunter2-is-not-configured' },
  },
  {
    type: 'tool_finished',
    runId: 'r1',
    toolCallId: 'c1',
    tool: 'http_get',
    effect: 'read',
    ok: false,
    code: 'http_error',
    durationMs: 5,
  },
  {
    type: 'finished',
    runId: 'r1',
    status: 'completed',
    stopReason: 'completed',
    message: `the answer ${SECRET}`,
  },
];

function runThrough(captureContent: boolean) {
  const t = tracer(captureContent);
  const segment = t.run.segment(undefined, {
    runId: 'r1',
    jobId: 'j1',
    job: 'start',
    requestModel: 'gpt-test',
    question: `what is ${SECRET}?`,
  });
  for (const event of events) segment.sink(event);
  segment.end('done');
  const byName = (name: string) => t.spans().find((s) => s.name === name) as ReadableSpan;
  return { t, segment, byName };
}

describe('RunTracer', () => {
  it('turns engine events into invoke_agent, chat and execute_tool spans of one trace', () => {
    const { byName, t } = runThrough(false);
    const agent = byName('invoke_agent loopgate');
    const chat = byName('chat gpt-test');
    const tool = byName('execute_tool http_get');
    expect(t.spans()).toHaveLength(3);
    for (const s of [chat, tool]) {
      expect(s.spanContext().traceId).toBe(agent.spanContext().traceId);
      expect(s.parentSpanContext?.spanId).toBe(agent.spanContext().spanId);
    }
    expect(chat.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'gpt-test',
      'gen_ai.usage.input_tokens': 120,
      'gen_ai.usage.output_tokens': 30,
      'gen_ai.response.finish_reasons': ['tool_calls'],
    });
    expect(tool.attributes).toMatchObject({
      'gen_ai.tool.name': 'http_get',
      'loopgate.tool.effect': 'read',
      'loopgate.tool.outcome': 'http_error',
      'error.type': 'http_error',
    });
    expect(agent.attributes).toMatchObject({
      'loopgate.run.status': 'completed',
      'loopgate.job.outcome': 'done',
    });
  });

  it('records no content by default', () => {
    const { t } = runThrough(false);
    const all = JSON.stringify(t.spans().map((s) => s.attributes));
    expect(all).not.toContain('what is');
    expect(all).not.toContain('x.example');
    expect(all).not.toContain('the answer');
  });

  it('records content when opted in, with configured secrets redacted', () => {
    const { byName, t } = runThrough(true);
    expect(String(byName('invoke_agent loopgate').attributes['gen_ai.input.messages'])).toContain('what is');
    expect(String(byName('execute_tool http_get').attributes['gen_ai.tool.call.arguments'])).toContain(
      'x.example',
    );
    expect(String(byName('invoke_agent loopgate').attributes['gen_ai.output.messages'])).toContain(
      'the answer',
    );
    const all = JSON.stringify(t.spans().map((s) => s.attributes));
    expect(all).not.toContain(SECRET);
    // A secret-named key's value is redacted too, as in the logs, though no setting names it.
    expect(all).not.toContain('hunter2');
    expect(String(byName('execute_tool http_get').attributes['gen_ai.tool.call.arguments'])).toContain(
      '"password":"[redacted]"',
    );
  });

  it('a carrier round-trips: a segment opened from it continues the same trace', () => {
    const t = tracer(false);
    const root = t.run.startSpan('slack.event mention', {});
    const carrier = traceCarrierSchema.parse(t.run.carrierOf(root));
    root.end();
    const segment = t.run.segment(carrier, { runId: 'r2', jobId: 'j2' });
    segment.end();
    const [event, agent] = t.spans();
    expect(agent?.spanContext().traceId).toBe(event?.spanContext().traceId);
    expect(agent?.parentSpanContext?.spanId).toBe(event?.spanContext().spanId);
  });

  it('an approval wait spans from the card to the decision, with who was asked and who decided', () => {
    const t = tracer(false);
    const segment = t.run.segment(undefined, { runId: 'r3', jobId: 'j3' });
    segment.approvalWaits([
      {
        approvalId: 'r3.ab',
        toolCallId: 'c9',
        tool: 'http_request',
        requester: 'U1',
        approvers: { users: ['U2'], groups: ['S1'] },
        createdAt: 1_000_000,
        status: 'approved',
        decidedBy: 'U2',
        decidedAt: 1_090_000,
      },
      {
        approvalId: 'r3.cd',
        toolCallId: 'c10',
        tool: 'http_request',
        requester: 'U1',
        approvers: { users: ['U2'], groups: [] },
        createdAt: 1_000_000,
        status: 'pending',
        decidedBy: null,
        decidedAt: null,
      },
    ]);
    segment.end();
    const waits = t.spans().filter((s) => s.name.startsWith('await_approval'));
    expect(waits).toHaveLength(1);
    expect(waits[0]?.attributes).toMatchObject({
      'loopgate.approval.asked': ['U2', 'S1'],
      'loopgate.approval.decided_by': 'U2',
      'loopgate.approval.wait_ms': 90_000,
    });
    expect(waits[0]?.duration).toEqual([90, 0]);
  });
});

describe('telemetrySettings', () => {
  it('is off without an endpoint (empty counts as unset), on with either endpoint variable', () => {
    expect(telemetrySettings({}).enabled).toBe(false);
    expect(telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }).enabled).toBe(false);
    expect(telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).enabled).toBe(true);
    expect(telemetrySettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' }).enabled).toBe(
      true,
    );
  });

  it('captures content only when the GenAI switch says true', () => {
    expect(telemetrySettings({}).captureContent).toBe(false);
    expect(
      telemetrySettings({ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' }).captureContent,
    ).toBe(true);
    expect(() => telemetrySettings({ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'yes' })).toThrow();
  });
});
