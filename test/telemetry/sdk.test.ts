/**
 * startTelemetry with the official SDK and exporters, to an OTLP receiver in the test: protobuf by
 * default (the specification's default, OTEL_EXPORTER_OTLP_PROTOCOL unset), JSON with `http/json`, and
 * the same span tree either way (so the receiver's protobuf reading is checked against its JSON reading).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Logger } from '../../src/loop/tool-contract.js';
import { startTelemetry } from '../../src/telemetry/sdk.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../fakes/otlp-receiver.js';

const logger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => logger };
let otlp: OtlpReceiver;
beforeAll(async () => {
  otlp = await startOtlpReceiver();
});
afterAll(async () => {
  await otlp?.close();
});
afterEach(() => {
  vi.unstubAllEnvs();
});

/** One stretch of a run, its chat, a failed tool call with a retry, a decision and an answer, exported. */
async function exportRun(runId: string, env: Record<string, string>) {
  // The SDK's exporter reads the endpoint from the process environment itself.
  for (const [k, v] of Object.entries({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, ...env })) vi.stubEnv(k, v);
  const telemetry = await startTelemetry({
    service: 'loopgate-test',
    env: process.env,
    logger,
    redact: (t) => t,
  });
  if (!telemetry) throw new Error('tracing did not start');
  const before = otlp.encodings.length;
  const segment = telemetry.segment(undefined, {
    runId,
    jobId: `${runId}-job`,
    job: 'start',
    requestModel: 'gpt-test',
    slack: { teamId: 'T1', channelId: 'C1', threadTs: '1700000000.000100' },
    follows: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
  });
  segment.sink({
    type: 'model_replied',
    runId,
    step: 1,
    toolCalls: 1,
    durationMs: 40,
    usage: { inputTokens: 120, outputTokens: 30 },
    costUsd: 0.000125,
    model: 'gpt-test-2026',
    finishReason: 'tool_calls',
  });
  segment.sink({ type: 'tool_started', runId, toolCallId: 'c1', tool: 'http_get', effect: 'read', args: {} });
  segment.sink({
    type: 'tool_retried',
    runId,
    toolCallId: 'c1',
    tool: 'http_get',
    effect: 'read',
    attempt: 1,
    code: 'timeout',
    message: 'timed out',
    delayMs: 5,
  });
  segment.sink({
    type: 'tool_finished',
    runId,
    toolCallId: 'c1',
    tool: 'http_get',
    effect: 'read',
    ok: false,
    code: 'http_error',
    durationMs: 5,
  });
  segment.sink({ type: 'decision_applied', runId, toolCallId: 'c1', decision: 'approved', by: 'U2' });
  segment.sink({ type: 'finished', runId, status: 'completed', stopReason: 'completed', message: 'done' });
  segment.end('done');
  await telemetry.shutdown();
  const spans = otlp.spans.filter((s) => s.traceId === segment.span.spanContext().traceId);
  return { spans, encodings: otlp.encodings.slice(before) };
}

/** The span tree as the receiver read it, without what differs from run to run (ids, times). */
function shape(spans: ReceivedSpan[]) {
  const agent = spans.find((s) => s.name.startsWith('invoke_agent'));
  return spans
    .map((s) => ({
      name: s.name,
      kind: s.kind,
      root: s.parentSpanId === '',
      childOfAgent: s.parentSpanId === agent?.spanId,
      attributes: {
        ...s.attributes,
        'loopgate.run.id': 'x',
        'gen_ai.conversation.id': 'x',
        'loopgate.job.id': 'x',
      },
      resource: s.resource['service.name'],
      links: s.links,
      events: s.events,
      lasted: s.endMs >= s.startMs,
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

describe('startTelemetry exports over OTLP/HTTP', () => {
  it('in protobuf by default, the whole span tree as the receiver reads it back', async () => {
    const { spans, encodings } = await exportRun('r-proto', {});
    expect(encodings.length).toBeGreaterThan(0);
    expect(new Set(encodings)).toEqual(new Set(['protobuf']));
    expect(spans.map((s) => s.name).sort()).toEqual([
      'chat gpt-test',
      'execute_tool http_get',
      'invoke_agent loopgate',
    ]);
    const agent = spans.find((s) => s.name === 'invoke_agent loopgate') as ReceivedSpan;
    const chat = spans.find((s) => s.name === 'chat gpt-test') as ReceivedSpan;
    const tool = spans.find((s) => s.name === 'execute_tool http_get') as ReceivedSpan;
    expect(agent.parentSpanId).toBe('');
    expect(agent.links).toEqual([
      { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' },
    ]);
    expect(agent.resource['service.name']).toBe('loopgate-test');
    expect(agent.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.conversation.id': 'r-proto',
      'gen_ai.request.model': 'gpt-test',
      'loopgate.job.name': 'start',
      'slack.channel.id': 'C1',
      'loopgate.run.status': 'completed',
      'loopgate.job.outcome': 'done',
    });
    expect(agent.events).toEqual(['decision_applied']);
    for (const child of [chat, tool]) expect(child.parentSpanId).toBe(agent.spanId);
    expect(chat.kind).toBe(3);
    expect(chat.attributes).toMatchObject({
      'gen_ai.response.model': 'gpt-test-2026',
      'gen_ai.usage.input_tokens': 120,
      'gen_ai.usage.output_tokens': 30,
      'gen_ai.response.finish_reasons': ['tool_calls'],
      'loopgate.step': 1,
      'loopgate.cost_usd': 0.000125,
    });
    expect(chat.endMs - chat.startMs).toBeGreaterThanOrEqual(39);
    expect(tool.attributes).toMatchObject({
      'gen_ai.tool.name': 'http_get',
      'gen_ai.tool.call.id': 'c1',
      'loopgate.tool.outcome': 'http_error',
      'error.type': 'http_error',
    });
    expect(tool.events).toEqual(['retry']);
  });

  it('in JSON with OTEL_EXPORTER_OTLP_PROTOCOL=http/json: the same spans', async () => {
    const proto = await exportRun('r-proto-2', {});
    const json = await exportRun('r-json', { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    expect(new Set(json.encodings)).toEqual(new Set(['json']));
    expect(shape(json.spans)).toEqual(shape(proto.spans));
  });

  it('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL overrides OTEL_EXPORTER_OTLP_PROTOCOL', async () => {
    const json = await exportRun('r-traces-json', {
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    });
    expect(new Set(json.encodings)).toEqual(new Set(['json']));
    const proto = await exportRun('r-traces-proto', {
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
    });
    expect(new Set(proto.encodings)).toEqual(new Set(['protobuf']));
  });

  it('refuses grpc (OTLP over gRPC is not sent), naming the variable', async () => {
    for (const name of ['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL']) {
      await expect(
        startTelemetry({
          service: 'loopgate-test',
          env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, [name]: 'grpc' },
          logger,
          redact: (t) => t,
        }),
      ).rejects.toThrow(`${name}: "grpc" is not supported, only http/protobuf (the default) or http/json`);
    }
  });
});
